// NRI's settings, as containerd's [plugins."io.containerd.nri.v1.nri"] has them (skiffd reads them
// from its [nri] table; node/skiffd/config.ts).

export const NRI_DEFAULTS = {
  socketPath: '/var/run/nri/nri.sock',
  pluginPath: '/opt/nri/plugins',
  pluginConfigPath: '/etc/nri/conf.d',
  registrationTimeoutMs: 5_000,
  requestTimeoutMs: 2_000,
} as const;

export interface NriConfig {
  /** false: no socket, no plugins, nothing on any path. */
  enable: boolean;
  socketPath: string;
  /** Pre-installed plugins: executables named NN-name, started by the runtime. */
  pluginPath: string;
  /** Their configuration: NN-name.conf or name.conf. */
  pluginConfigPath: string;
  registrationTimeoutMs: number;
  requestTimeoutMs: number;
  /** Only pre-installed plugins; the socket is not created. */
  disableConnections: boolean;
}
