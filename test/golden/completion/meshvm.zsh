#compdef meshvm
# meshvm completion for zsh. Load with: source <(meshvm completion zsh)
autoload -U +X bashcompinit && bashcompinit
_meshvm() {
  local cur="${COMP_WORDS[COMP_CWORD]}" out directive line
  local -a values=() cmd=(/usr/bin/node '/opt/mesh vm'"'"'s/bin/run.js')
  [[ "${COMP_WORDS[0]}" == */* ]] && cmd=("${COMP_WORDS[0]}")
  out=$("${cmd[@]}" __complete "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null) || return
  directive="${out##*:}"
  while IFS= read -r line; do
    [[ -z "$line" || "$line" == :* ]] && continue
    values+=("$line")
  done <<< "$out"
  COMPREPLY=("${values[@]}")
  # Nothing known here but a path: the shell completes file (0) or directory (16) names.
  if [[ ${#values[@]} -eq 0 && ( "$directive" == 0 || "$directive" == 16 ) ]]; then
    compopt -o filenames 2>/dev/null
    local kind=-f
    [[ "$directive" == 16 ]] && kind=-d
    while IFS= read -r line; do COMPREPLY+=("$line"); done < <(compgen "$kind" -- "$cur")
  fi
  # A value ending in = (-o jsonpath=) takes more text: no space after it.
  if [[ ${#COMPREPLY[@]} -eq 1 && "${COMPREPLY[0]}" == *= ]]; then compopt -o nospace 2>/dev/null; fi
}
complete -F _meshvm meshvm
