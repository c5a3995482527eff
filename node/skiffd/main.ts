// skiffd entry point: flags and config, logging, the daemon, and signal handling.
// Exit codes: 0 clean stop, 1 startup failure, 2 bad flags or config.
import { helpText, parseCli, versionText } from './cli.ts';
import { ConfigError, loadConfig, type SkiffdConfig } from './config.ts';
import { startDaemon } from './daemon.ts';
import { createLogger } from './logger.ts';
import { StartupError } from './server.ts';
import { RUNTIME_VERSION } from './version.ts';

async function main(argv: string[]): Promise<number> {
  let config: SkiffdConfig;
  try {
    const cli = parseCli(argv);
    if (cli.help) {
      process.stdout.write(helpText());
      return 0;
    }
    if (cli.version) {
      process.stdout.write(versionText() + '\n');
      return 0;
    }
    config = loadConfig({ configFile: cli.configFile, overrides: cli.overrides });
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`skiffd: ${err.message}\n`);
      return 2;
    }
    throw err;
  }

  const log = createLogger(config.logLevel, undefined, {}, config.logFormat);
  // The first line, before any subsystem opens: a start that never gets further is then told apart
  // from one that never ran.
  log.info('starting', { version: RUNTIME_VERSION, pid: process.pid });
  // A stray rejection or exception in a background task is logged, never fatal: pods keep running.
  process.on('unhandledRejection', (err) => log.error('unhandled rejection', { err: err instanceof Error ? (err.stack ?? err.message) : String(err) }));
  process.on('uncaughtException', (err) => log.error('uncaught exception', { err: err.stack ?? err.message }));

  // Signal handlers go in before startup: the "serving" line can reach a client (which may signal
  // at once) before this function resumes, and an unhandled SIGHUP/SIGTERM would kill the process.
  let requested: NodeJS.Signals | undefined;
  let onSignal: (signal: NodeJS.Signals) => void = (signal) => {
    requested ??= signal;
  };
  process.on('SIGTERM', (s) => onSignal(s));
  process.on('SIGINT', (s) => onSignal(s));
  // Node would exit on SIGHUP (a closed terminal); a daemon must not. There is no live reload.
  process.on('SIGHUP', () => log.warn('SIGHUP ignored: config reload is not supported; restart skiffd to apply changes'));

  let daemon: Awaited<ReturnType<typeof startDaemon>>;
  try {
    daemon = await startDaemon(config, log);
  } catch (err) {
    log.error('startup failed', { err: err instanceof StartupError ? err.message : err instanceof Error ? (err.stack ?? err.message) : String(err) });
    return 1;
  }

  return new Promise<number>((resolve) => {
    let signals = 0;
    onSignal = (signal: NodeJS.Signals) => {
      if (++signals > 1) {
        log.warn('second signal during shutdown; exiting now', { signal });
        resolve(1);
        return;
      }
      daemon.stop(signal).then(
        () => resolve(0),
        (err) => {
          log.error('shutdown failed', { err });
          resolve(1);
        },
      );
    };
    if (requested) onSignal(requested);
  });
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(`skiffd: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
