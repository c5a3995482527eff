// ws probes for optional native helpers (bufferutil, utf-8-validate) with require() when it loads.
// skiffd ships neither, and inside the single executable that require() knows only built-in modules
// and prints a warning on every start. Tell ws not to look; import this before 'ws'.
process.env.WS_NO_BUFFER_UTIL ??= '1';
process.env.WS_NO_UTF_8_VALIDATE ??= '1';

export {};
