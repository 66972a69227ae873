import CreateRemoteSecret from '../create-remote-secret.js'

/** `meshvm remote-secret create`: the same command as `meshvm create-remote-secret`. */
export default class RemoteSecretCreate extends CreateRemoteSecret {
  static override summary = 'Create a remote secret (the same command as create-remote-secret).'
}
