/**
 * The YAML a bundle reads from the cluster (the mesh config of ConfigMap istio, a WorkloadGroup's
 * proxy.istio.io/config annotation), as the `yaml` library reads it with YAML 1.1. Mesh configs are
 * block mappings of plain strings and booleans, which the fast subset reader of kubeconfigs reads
 * without running the library's parser cold; anything else it leaves to the library, which gives the
 * value or the error. Pure: no I/O.
 */
import {parse as parseYaml} from 'yaml'
import {parseKubeconfigYaml} from '../kube/kubeconfig-yaml.js'

/** Throws the library's error for text that is not YAML. */
export function parseMeshYaml(text: string): unknown {
  const fast = parseKubeconfigYaml(text)
  // logLevel 'error': the yaml library would print warnings (e.g. unknown tags) as Node process warnings.
  return fast !== undefined ? fast : parseYaml(text, {version: '1.1', logLevel: 'error'})
}
