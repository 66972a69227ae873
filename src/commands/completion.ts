import * as Args from '@oclif/core/args'
import {BaseCommand} from '../lib/cli/base-command.js'
import {completionScript, SHELLS, type Shell} from '../lib/completion.js'

export default class Completion extends BaseCommand<typeof Completion> {
  static override summary = 'Print a shell completion script (bash, zsh or fish).'

  static override description = `Completes commands, flags, fixed flag values (such as -o), and from the cluster, within 2 seconds: namespaces (-n), contexts (--context, from the kubeconfig), WorkloadGroup names (onboard, bundle, precheck, war rollout, --group) and registration names (war describe, war delete), using the --kubeconfig, --context and -n already typed. The script asks meshvm at each TAB, so it never drifts from the installed version.

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
    this.out(completionScript(this.args.shell as Shell, 'meshvm'))
  }
}
