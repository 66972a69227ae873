import * as Args from '@oclif/core/args'
import {BaseCommand} from '../lib/cli/base-command.js'
import {completionScript, selfCommand, SHELLS, type Shell} from '../lib/completion.js'

export default class Completion extends BaseCommand<typeof Completion> {
  static override summary = 'Print a shell completion script (bash, zsh or fish).'

  static override description =
    `Completes commands, flags, fixed flag values (such as -o), and from the cluster, within 2 seconds: namespaces (-n), contexts (--context, from the kubeconfig), WorkloadGroup names (onboard, bundle, precheck, war rollout, --group), registration names (war describe, war delete), proxy names (proxy-status NAME: POD.NAMESPACE and registration names) and remote secret names (remote-secret status|rotate, in -i), using the --kubeconfig, --context, -n and -i already typed; and file and directory names where a path is expected (-f, --kubeconfig, --output-file, --archive, -d, --bundle, bundle verify DIR). The script asks the meshvm that generated it (by its absolute path, so an alias works too) at each TAB, so it never drifts from that installed version; regenerate it after moving or reinstalling meshvm.

As a kubectl plugin, kubectl (1.26+) completes "kubectl meshvm …" through the kubectl_complete-meshvm executable this package installs next to kubectl-meshvm.`

  static override examples = [
    {description: 'bash, for this shell:', command: 'source <(<%= config.bin %> <%= command.id %> bash)'},
    {description: 'bash, for every new shell:', command: "echo 'source <(<%= config.bin %> <%= command.id %> bash)' >> ~/.bashrc"},
    {description: 'zsh:', command: 'source <(<%= config.bin %> <%= command.id %> zsh)'},
    {description: 'fish:', command: '<%= config.bin %> <%= command.id %> fish > ~/.config/fish/completions/<%= config.bin %>.fish'},
  ]

  static override args = {
    shell: Args.string({description: 'The shell.', options: [...SHELLS], required: true}),
  }

  async run(): Promise<void> {
    // The script calls this meshvm by its absolute path, so TAB works through an alias too.
    this.out(completionScript(this.args.shell as Shell, 'meshvm', selfCommand(process.execPath, process.argv[1])))
  }
}
