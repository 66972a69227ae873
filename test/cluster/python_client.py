"""The official Kubernetes Python client (Debian's python3-kubernetes, run with /usr/bin/python3)
against the test API server: one scenario per run, named by argv[1]; prints one JSON document with
what the client saw. Used by python-client.test.ts; KUBECONFIG comes from the environment."""
import json
import os
import sys

from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

config.load_kube_config()
core = client.CoreV1Api()
custom = client.CustomObjectsApi()
NS = os.environ.get('NAMESPACE', 'default')
out = {}


def error(e):
    body = json.loads(e.body) if e.body else {}
    return {'status': e.status, 'reason': body.get('reason'), 'message': body.get('message')}


def cm(name, labels=None, data=None):
    return client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name, labels=labels), data=data or {'k': 'v'})


def dry_run():
    created = core.create_namespaced_config_map(NS, cm('dry', data={'k': '1'}))
    stored_rv = created.metadata.resource_version
    patched = core.patch_namespaced_config_map('dry', NS, {'data': {'k': '2'}}, dry_run='All')
    out['stored'] = stored_rv
    out['dryRunPatch'] = {'rv': patched.metadata.resource_version, 'data': patched.data}
    out['afterDryRun'] = core.read_namespaced_config_map('dry', NS).data
    fresh = core.create_namespaced_config_map(NS, cm('dry-new'), dry_run='All')
    out['dryRunCreate'] = {'rv': fresh.metadata.resource_version, 'uid': bool(fresh.metadata.uid)}


def delete_precondition():
    created = core.create_namespaced_config_map(NS, cm('pre'))
    core.patch_namespaced_config_map('pre', NS, {'data': {'k': 'changed'}})
    try:
        core.delete_namespaced_config_map('pre', NS, body=client.V1DeleteOptions(preconditions=client.V1Preconditions(resource_version=created.metadata.resource_version)))
        out['stale'] = 'deleted'
    except ApiException as e:
        out['stale'] = error(e)
    current = core.read_namespaced_config_map('pre', NS)
    gone = core.delete_namespaced_config_map('pre', NS, body=client.V1DeleteOptions(preconditions=client.V1Preconditions(resource_version=current.metadata.resource_version)))
    out['fresh'] = {'kind': gone.kind, 'status': gone.status, 'details': {'name': gone.details.name, 'kind': gone.details.kind, 'uid': gone.details.uid == current.metadata.uid}}


def delete_returns():
    core.create_namespaced_service_account(NS, client.V1ServiceAccount(metadata=client.V1ObjectMeta(name='robot')))
    sa = core.delete_namespaced_service_account('robot', NS)
    out['serviceAccount'] = {'kind': sa.kind, 'name': sa.metadata.name}
    wg = {'apiVersion': 'networking.istio.io/v1', 'kind': 'WorkloadGroup', 'metadata': {'name': 'fg', 'finalizers': ['example.com/keep']},
          'spec': {'template': {'serviceAccount': 'default'}}}
    custom.create_namespaced_custom_object('networking.istio.io', 'v1', NS, 'workloadgroups', wg)
    fg = custom.delete_namespaced_custom_object('networking.istio.io', 'v1', NS, 'workloadgroups', 'fg', propagation_policy='Foreground')
    out['foreground'] = {'kind': fg['kind'], 'finalizers': fg['metadata'].get('finalizers'), 'deletionTimestamp': bool(fg['metadata'].get('deletionTimestamp'))}
    custom.patch_namespaced_custom_object('networking.istio.io', 'v1', NS, 'workloadgroups', 'fg', {'metadata': {'finalizers': None}})
    try:
        custom.get_namespaced_custom_object('networking.istio.io', 'v1', NS, 'workloadgroups', 'fg')
        out['afterFinalizers'] = 'still there'
    except ApiException as e:
        out['afterFinalizers'] = e.status


def watch_selector_exit():
    core.create_namespaced_config_map(NS, cm('member', labels={'team': 'a'}))
    listed = core.list_namespaced_config_map(NS, label_selector='team=a')
    core.patch_namespaced_config_map('member', NS, {'metadata': {'labels': {'team': 'b'}}})
    core.patch_namespaced_config_map('member', NS, {'metadata': {'labels': {'team': 'a'}}})
    events = []
    for e in watch.Watch().stream(core.list_namespaced_config_map, NS, label_selector='team=a', resource_version=listed.metadata.resource_version, timeout_seconds=1):
        events.append([e['type'], e['object'].metadata.name, e['object'].metadata.labels.get('team')])
    out['events'] = events


def watch_bookmark():
    listed = core.list_namespaced_config_map(NS)
    resp = core.list_namespaced_config_map(NS, watch=True, allow_watch_bookmarks=True, resource_version=listed.metadata.resource_version, timeout_seconds=2, _preload_content=False)
    types = []
    for line in resp:
        for part in line.decode().splitlines():
            if part.strip():
                event = json.loads(part)
                types.append(event['type'])
                if event['type'] == 'BOOKMARK':
                    out['bookmark'] = event['object']['metadata']
                    resp.close()
                    break
        if 'bookmark' in out:
            break
    out['types'] = types


def watch_headers():
    # Secrets of a namespace nothing writes to: no event to send. The response (status and
    # headers) must still arrive, or the client waits for the read timeout.
    listed = core.list_namespaced_secret(NS)
    resp = core.list_namespaced_secret(NS, watch=True, resource_version=listed.metadata.resource_version, timeout_seconds=30, _preload_content=False, _request_timeout=(10, 10))
    out['status'] = resp.status
    out['contentType'] = resp.headers.get('Content-Type')
    resp.release_conn()


def watch_expired():
    try:
        for _ in watch.Watch().stream(core.list_namespaced_config_map, NS, resource_version=os.environ['OLD_RV'], timeout_seconds=1):
            pass
        out['result'] = 'no error'
    except ApiException as e:
        out['result'] = {'status': e.status, 'reason': e.reason}


def list_snapshot():
    for name in ['snap-a', 'snap-b', 'snap-c']:
        core.create_namespaced_config_map(NS, cm(name, labels={'snap': 'yes'}))
    first = core.list_namespaced_config_map(NS, label_selector='snap=yes', limit=1)
    core.patch_namespaced_config_map('snap-b', NS, {'data': {'k': 'changed'}})
    core.delete_namespaced_config_map('snap-c', NS)
    rest = core.list_namespaced_config_map(NS, label_selector='snap=yes', limit=5, _continue=first.metadata._continue)
    out['first'] = [i.metadata.name for i in first.items]
    out['rest'] = [[i.metadata.name, i.data['k']] for i in rest.items]
    out['sameVersion'] = first.metadata.resource_version == rest.metadata.resource_version


def bool_query():
    # kube-apiserver reads force=1 (or True, yes...) as true, like any value but "false" and "0".
    api = client.ApiClient()
    body = {'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': {'name': 'owned'}, 'data': {'k': 'mine'}}
    # The generated REST layer sends a str body as it is (JSON is YAML for an apply patch).
    path = '/api/v1/namespaces/{}/configmaps/owned'.format(NS)
    headers = {'Content-Type': 'application/apply-patch+yaml', 'Accept': 'application/json'}
    api.call_api(path, 'PATCH', query_params=[('fieldManager', 'first')], header_params=headers, body=json.dumps(body), auth_settings=['BearerToken'], _return_http_data_only=True)
    body['data']['k'] = 'theirs'
    for value in ['false', '1']:
        try:
            api.call_api(path, 'PATCH', query_params=[('fieldManager', 'second'), ('force', value)], header_params=headers, body=json.dumps(body), auth_settings=['BearerToken'], _return_http_data_only=True)
            out['force=' + value] = core.read_namespaced_config_map('owned', NS).data['k']
        except ApiException as e:
            out['force=' + value] = e.status


def custom_update_without_rv():
    wg = {'apiVersion': 'networking.istio.io/v1', 'kind': 'WorkloadGroup', 'metadata': {'name': 'norv'}, 'spec': {'template': {'serviceAccount': 'default'}}}
    custom.create_namespaced_custom_object('networking.istio.io', 'v1', NS, 'workloadgroups', wg)
    try:
        custom.replace_namespaced_custom_object('networking.istio.io', 'v1', NS, 'workloadgroups', 'norv', wg)
        out['custom'] = 'replaced'
    except ApiException as e:
        out['custom'] = error(e)
    core.create_namespaced_config_map(NS, cm('norv'))
    out['builtin'] = core.replace_namespaced_config_map('norv', NS, cm('norv', data={'k': 'new'})).data


def namespace_terminating():
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name='doomed')))
    wg = {'apiVersion': 'networking.istio.io/v1', 'kind': 'WorkloadGroup', 'metadata': {'name': 'held', 'finalizers': ['example.com/keep']}, 'spec': {'template': {'serviceAccount': 'default'}}}
    custom.create_namespaced_custom_object('networking.istio.io', 'v1', 'doomed', 'workloadgroups', wg)
    # The generated client types this answer as V1Status; kube-apiserver sends the Namespace.
    ns = json.loads(core.delete_namespace('doomed', _preload_content=False).data)
    out['deleted'] = {'kind': ns['kind'], 'phase': ns['status']['phase'], 'deletionTimestamp': 'deletionTimestamp' in ns['metadata']}
    try:
        core.create_namespaced_config_map('doomed', cm('late'))
        out['create'] = 'created'
    except ApiException as e:
        out['create'] = error(e)
    out['phase'] = core.read_namespace('doomed').status.phase
    custom.patch_namespaced_custom_object('networking.istio.io', 'v1', 'doomed', 'workloadgroups', 'held', {'metadata': {'finalizers': None}})


def delete_collection():
    for name in ['bulk-a', 'bulk-b']:
        core.create_namespaced_config_map(NS, cm(name, labels={'bulk': 'yes'}))
    # The generated client types the answer as V1Status; kube-apiserver sends the deleted list.
    answer = json.loads(core.delete_collection_namespaced_config_map(NS, label_selector='bulk=yes', _preload_content=False).data)
    out['kind'] = answer['kind']
    out['names'] = [i['metadata']['name'] for i in answer['items']]
    out['left'] = [i.metadata.name for i in core.list_namespaced_config_map(NS, label_selector='bulk=yes').items]


def bad_field_validation():
    # This client version has no field_validation argument: the query parameter is sent as it is.
    api = client.ApiClient()
    body = {'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': {'name': 'strictly'}}
    try:
        api.call_api('/api/v1/namespaces/{}/configmaps'.format(NS), 'POST', query_params=[('fieldValidation', 'Bogus')], header_params={'Content-Type': 'application/json', 'Accept': 'application/json'},
                     body=body, auth_settings=['BearerToken'], _return_http_data_only=True)
        out['create'] = 'created'
    except ApiException as e:
        out['create'] = error(e)


SCENARIOS = {f.__name__: f for f in [dry_run, delete_precondition, delete_returns, watch_selector_exit, watch_bookmark, watch_headers, watch_expired, list_snapshot, bool_query, custom_update_without_rv, namespace_terminating, delete_collection, bad_field_validation]}

SCENARIOS[sys.argv[1]]()
print(json.dumps(out))
