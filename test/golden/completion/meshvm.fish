# meshvm completion for fish. Load with: meshvm completion fish | source
function __meshvm_complete
  set -l words (commandline -opc) (commandline -ct)
  set -l cmd '/usr/bin/node' '/opt/mesh vm\'s/bin/run.js'
  string match -q -- '*/*' $words[1]; and set cmd $words[1]
  set -l out ($cmd __complete $words[2..-1] 2>/dev/null)
  set -l values
  for line in $out
    string match -q -- ':*' $line; or set -a values $line
  end
  if test (count $values) -gt 0
    printf '%s\n' $values
  else if test "$out[-1]" = ':0'
    __fish_complete_path (commandline -ct)
  else if test "$out[-1]" = ':16'
    __fish_complete_directories (commandline -ct)
  end
end
complete -c meshvm -f -a '(__meshvm_complete)'
