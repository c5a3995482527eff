// What skiffd keeps under its --state directory, by name. The stores join these onto it; a runtime
// handler's --root, whose default is <state>/NAME, must not land on one (runtime-handlers-config.ts).
export const STATE_ENTRIES = {
  /** conmon's exit files, one per container (containers/store.ts). */
  exits: 'exits',
  /** conmon's attach sockets (containers/store.ts). */
  attach: 'attach',
  /** ID-mapped mounts of user-namespaced containers (containers/store.ts). */
  idmap: 'idmap',
  /** Each pod's namespaces and /dev/shm (pods/store.ts). */
  pods: 'pods',
  /** The pod CIDR the kubelet handed over (services/runtime/update-runtime-config.ts). */
  runtimeConfig: 'runtime-config.json',
  /** The digest of the AppArmor profile last loaded (confinement/apparmor/index.ts). */
  apparmorDigest: 'apparmor-default.sha256',
} as const;
