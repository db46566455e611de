#!/usr/bin/python3
"""k8s_pod.py: what a Kubernetes controller and the kubelet would give pod INDEX of a manifest, for tests/bb/k8s.t.

    k8s_pod.py MANIFEST INDEX --root DIR --shared DIR --pod-ip ADDR [--secret NAME/KEY=VALUE]... [--cluster-ip ADDR]

Reads every document of MANIFEST (PyYAML), finds its one workload (an Indexed Job, a JobSet or a Kubeflow
PyTorchJob) and prints, as bash assignments, the pod's host name, DNS names, its container's command + args
and environment: the container's env (value, secretKeyRef from a Secret of the same file unless --secret
overrides it, configMapKeyRef, fieldRef) after what the controller injects (Indexed Job and JobSet:
JOB_COMPLETION_INDEX; PyTorchJob: MASTER_ADDR/PORT, WORLD_SIZE, RANK and the PET_* variables of Kubeflow's
training operator) and what the kubelet and the runtime add (KUBERNETES_SERVICE_*, HOSTNAME). $(VAR) in
command and args is expanded as the kubelet does. The pod's volumes are made under DIR (Secret and ConfigMap
volumes laid out as the kubelet's atomic writer does: KEY -> ..data/KEY, ..data -> ..<timestamp>/, files with
defaultMode), persistent volume claims under the --shared DIR by claim name, and paths in the arguments that
lie under a mount path are rewritten to those directories. Nothing here talks to a cluster.
"""
import argparse
import base64
import os
import re
import shlex
import sys

import yaml

NAMESPACE_DEFAULT = "default"
CLUSTER_DOMAIN = "svc.cluster.local"
PYTORCH_CONTAINER = "pytorch"          # training operator: the container whose port is the master port
PYTORCH_PORT_NAME = "pytorchjob-port"
PYTORCH_PORT_DEFAULT = 23456           # the operator's default when the port is not named in the manifest
IMAGE_ENV = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}


def die(msg):
    print("k8s_pod.py: " + msg, file=sys.stderr)
    sys.exit(2)


class Pod:
    """One pod as a controller would create it."""

    def __init__(self, kind, count, hostname, subdomain, spec, namespace):
        self.kind, self.count, self.hostname, self.subdomain = kind, count, hostname, subdomain
        self.spec, self.namespace = spec, namespace
        self.name = hostname
        self.injected = []                 # (name, value) the controller adds to every container's env
        self.dns = []                      # names other pods resolve to reach this one
        self.restart_policy = spec.get("restartPolicy", "Always")
        self.fail_on_exit = []             # exit codes a podFailurePolicy rule turns into FailJob
        self.container = None


def indexed_pods(jobname, jobspec, namespace, kind, total):
    """The pods of one Indexed Job, in index order."""
    if jobspec.get("completionMode", "Indexed" if kind == "JobSet" else "NonIndexed") != "Indexed":
        die(f"job {jobname}: completionMode must be Indexed")
    n = int(jobspec.get("completions", 1))
    if int(jobspec.get("parallelism", 1)) != n:
        die(f"job {jobname}: parallelism {jobspec.get('parallelism')} != completions {n}: some nodes would wait")
    tmpl = jobspec["template"]["spec"]
    codes = []
    for rule in (jobspec.get("podFailurePolicy") or {}).get("rules", []):
        oec = rule.get("onExitCodes")
        if rule.get("action") == "FailJob" and oec and oec.get("operator") == "In":
            codes += [int(v) for v in oec.get("values", [])]
    pods = []
    for i in range(n):
        host = tmpl.get("hostname") or f"{jobname}-{i}"   # the Job controller's host name for index i
        p = Pod(kind, total, host, tmpl.get("subdomain"), tmpl, namespace)
        p.name = f"{host}-k8spt"                         # pod names carry a random suffix; ours is fixed
        p.injected = [("JOB_COMPLETION_INDEX", str(i))]
        if p.subdomain:
            p.dns = [f"{host}.{p.subdomain}", f"{host}.{p.subdomain}.{namespace}.{CLUSTER_DOMAIN}"]
        p.fail_on_exit = codes
        pods.append(p)
    return pods


def job_pods(doc, ns):
    spec = doc["spec"]
    return indexed_pods(doc["metadata"]["name"], spec, ns, "Job", int(spec.get("completions", 1)))


def jobset_pods(doc, ns):
    name, spec = doc["metadata"]["name"], doc["spec"]
    net = spec.get("network") or {}
    subdomain = (net.get("subdomain") or name) if net.get("enableDNSHostnames", True) else None
    total = sum(int(r.get("replicas", 1)) * int(r["template"]["spec"].get("completions", 1))
                for r in spec["replicatedJobs"])
    pods = []
    for rj in spec["replicatedJobs"]:
        for j in range(int(rj.get("replicas", 1))):
            jobspec = dict(rj["template"]["spec"])
            tmpl = dict(jobspec["template"]["spec"])
            if subdomain:
                tmpl["subdomain"] = subdomain              # JobSet sets the subdomain of its Jobs' pods
            jobspec["template"] = {"spec": tmpl}
            pods += indexed_pods(f"{name}-{rj['name']}-{j}", jobspec, ns, "JobSet", total)
    return pods


def pytorchjob_pods(doc, ns):
    name, specs = doc["metadata"]["name"], doc["spec"]["pytorchReplicaSpecs"]
    if "Master" not in specs:
        die("PyTorchJob without a Master replica: the operator sets no MASTER_ADDR or RANK")
    if set(specs) - {"Master", "Worker"}:
        die(f"PyTorchJob replica types {sorted(specs)}: only Master and Worker are simulated")
    order = [t for t in ("Master", "Worker") if t in specs]
    total = sum(int(specs[t].get("replicas", 1)) for t in order)
    nproc = doc["spec"].get("nprocPerNode")
    per_node = int(nproc) if nproc is not None and str(nproc).isdigit() else 1
    port = PYTORCH_PORT_DEFAULT
    for c in specs["Master"]["template"]["spec"]["containers"]:
        if c["name"] == PYTORCH_CONTAINER:
            port = next((p["containerPort"] for p in c.get("ports", []) if p.get("name") == PYTORCH_PORT_NAME), port)
    master = f"{name}-master-0"
    elastic = doc["spec"].get("elasticPolicy")
    pods = []
    for rtype in order:
        rs = specs[rtype]
        for idx in range(int(rs.get("replicas", 1))):
            host = f"{name}-{rtype.lower()}-{idx}"          # pod name = host name; a headless Service of that name
            p = Pod("PyTorchJob", total, host, None, rs["template"]["spec"], ns)
            p.restart_policy = rs.get("restartPolicy", "Never")
            rank = idx + (1 if rtype == "Worker" else 0)   # the operator's RANK: the Master is 0
            p.injected = [("PYTHONUNBUFFERED", "1"), ("MASTER_PORT", str(port)), ("PET_MASTER_PORT", str(port)),
                          ("MASTER_ADDR", master), ("PET_MASTER_ADDR", master),
                          ("WORLD_SIZE", str(total * per_node)), ("RANK", str(rank)), ("PET_NODE_RANK", str(rank))]
            if nproc is not None:
                p.injected.append(("PET_NPROC_PER_NODE", str(nproc)))
            if elastic:
                die("elasticPolicy: not simulated (PET_RDZV_* and a MIN:MAX PET_NNODES)")
            p.injected.append(("PET_NNODES", str(total)))
            p.dns = [host, f"{host}.{ns}.{CLUSTER_DOMAIN}"]
            pods.append(p)
    return pods


def expand(text, env):
    """The kubelet's $(VAR) expansion: known names are replaced, $$ is a literal $, the rest is kept."""
    return re.sub(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)",
                  lambda m: "$" if m.group(0) == "$$" else env.get(m.group(1), m.group(0)), text)


def atomic_volume(path, files, mode):
    """Lays out files as the kubelet's atomic writer does: KEY -> ..data/KEY, ..data -> ..TIMESTAMP/KEY."""
    stamp = "..2026_01_01_00_00_00.000000001"
    os.makedirs(os.path.join(path, stamp), exist_ok=True)
    for key, (data, fmode) in files.items():
        f = os.path.join(path, stamp, key)
        with open(f, "wb") as out:
            out.write(data)
        os.chmod(f, fmode if fmode is not None else mode)
        os.symlink(os.path.join("..data", key), os.path.join(path, key))
    os.symlink(stamp, os.path.join(path, "..data"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("manifest")
    ap.add_argument("index", type=int)
    ap.add_argument("--root", required=True, help="where this pod's volumes are made")
    ap.add_argument("--shared", required=True, help="where persistent volume claims live, one folder per claim")
    ap.add_argument("--pod-ip", required=True)
    ap.add_argument("--cluster-ip", default="198.19.0.1", help="the kubernetes Service's address")
    ap.add_argument("--secret", action="append", default=[], help="NAME/KEY=VALUE in place of the file's")
    a = ap.parse_args()

    with open(a.manifest) as f:
        docs = [d for d in yaml.safe_load_all(f) if d]
    secrets, configmaps, work = {}, {}, []
    for d in docs:
        kind, name = d.get("kind"), d.get("metadata", {}).get("name")
        if kind == "Secret":
            data = {k: base64.b64decode(v) for k, v in (d.get("data") or {}).items()}
            data.update({k: str(v).encode() for k, v in (d.get("stringData") or {}).items()})
            secrets[name] = data
        elif kind == "ConfigMap":
            configmaps[name] = {k: str(v).encode() for k, v in (d.get("data") or {}).items()}
        elif kind in ("Job", "JobSet", "PyTorchJob"):
            work.append(d)
    for s in a.secret:
        ref, _, value = s.partition("=")
        sname, _, key = ref.partition("/")
        secrets.setdefault(sname, {})[key] = value.encode()
    if len(work) != 1:
        die(f"{a.manifest}: expected one Job, JobSet or PyTorchJob, found {len(work)}")
    doc = work[0]
    ns = doc["metadata"].get("namespace", NAMESPACE_DEFAULT)
    pods = {"Job": job_pods, "JobSet": jobset_pods, "PyTorchJob": pytorchjob_pods}[doc["kind"]](doc, ns)
    if not 0 <= a.index < len(pods):
        die(f"pod index {a.index} outside 0..{len(pods) - 1}")
    pod = pods[a.index]
    containers = pod.spec["containers"]
    c = next((x for x in containers if x["name"] == PYTORCH_CONTAINER), None) if pod.kind == "PyTorchJob" \
        else containers[0]
    if c is None:
        die("PyTorchJob: no container named pytorch")

    # Environment: what the kubelet and the runtime give every container, then the container's own list
    # (each value may refer to the names before it), then what the controller appended to that list.
    env = dict(IMAGE_ENV)
    env.update({"HOSTNAME": pod.hostname, "KUBERNETES_SERVICE_HOST": a.cluster_ip, "KUBERNETES_SERVICE_PORT": "443",
                "KUBERNETES_SERVICE_PORT_HTTPS": "443", "KUBERNETES_PORT": f"tcp://{a.cluster_ip}:443",
                "KUBERNETES_PORT_443_TCP": f"tcp://{a.cluster_ip}:443", "KUBERNETES_PORT_443_TCP_PROTO": "tcp",
                "KUBERNETES_PORT_443_TCP_PORT": "443", "KUBERNETES_PORT_443_TCP_ADDR": a.cluster_ip})
    fields = {"metadata.name": pod.name, "metadata.namespace": ns, "status.podIP": a.pod_ip,
              "spec.nodeName": "node-" + pod.hostname}
    if pod.kind != "PyTorchJob":
        fields["metadata.annotations['batch.kubernetes.io/job-completion-index']"] = dict(pod.injected)[
            "JOB_COMPLETION_INDEX"]
    for e in list(c.get("env", [])) + [{"name": k, "value": v} for k, v in pod.injected]:
        if "value" in e:
            env[e["name"]] = expand(str(e["value"]), env)
            continue
        vf = e.get("valueFrom", {})
        if "secretKeyRef" in vf or "configMapKeyRef" in vf:
            ref = vf.get("secretKeyRef") or vf["configMapKeyRef"]
            store = secrets if "secretKeyRef" in vf else configmaps
            if ref["key"] not in store.get(ref["name"], {}):
                if ref.get("optional"):
                    continue
                die(f"env {e['name']}: {ref['name']}/{ref['key']} is in no Secret or ConfigMap of the file")
            env[e["name"]] = store[ref["name"]][ref["key"]].decode()
        elif "fieldRef" in vf and vf["fieldRef"]["fieldPath"] in fields:
            env[e["name"]] = fields[vf["fieldRef"]["fieldPath"]]
        else:
            die(f"env {e['name']}: valueFrom {sorted(vf)} is not simulated")

    # Volumes: made under --root (or --shared for claims); mount paths map to those folders.
    volumes = {v["name"]: v for v in pod.spec.get("volumes", [])}
    mounts = []
    for m in c.get("volumeMounts", []):
        v, mp = volumes[m["name"]], m["mountPath"]
        if "subPath" in m:
            die(f"volume mount {mp}: subPath is not simulated")
        path = os.path.join(a.root, mp.lstrip("/"))
        if "persistentVolumeClaim" in v:
            path = os.path.join(a.shared, v["persistentVolumeClaim"]["claimName"])
            os.makedirs(path, exist_ok=True)
        elif "secret" in v or "configMap" in v:
            src = v.get("secret") or v["configMap"]
            data = secrets.get(src.get("secretName"), {}) if "secret" in v else configmaps.get(src["name"], {})
            items = src.get("items")
            files = {it["path"]: (data[it["key"]], it.get("mode")) for it in items} if items else \
                {k: (val, None) for k, val in data.items()}
            atomic_volume(path, files, int(src.get("defaultMode", 0o644)))
        elif "emptyDir" in v:
            os.makedirs(path, exist_ok=True)
        else:
            die(f"volume {m['name']}: kind {sorted(v)} is not simulated")
        mounts.append((mp.rstrip("/"), path))
    mounts.sort(key=lambda t: -len(t[0]))

    def remap(arg):
        head, eq, tail = arg.partition("=") if arg.startswith("-") and "=" in arg else ("", "", arg)
        for mp, path in mounts:
            if tail == mp or tail.startswith(mp + "/"):
                return head + eq + path + tail[len(mp):]
        return arg

    argv = [remap(expand(str(x), env)) for x in list(c.get("command", [])) + list(c.get("args", []))]
    self_line = (f"{pod.hostname}.{pod.subdomain}.{ns}.{CLUSTER_DOMAIN}\t{pod.hostname}" if pod.subdomain
                 else pod.hostname)
    out = {"POD_KIND": pod.kind, "POD_COUNT": str(pod.count), "POD_NAME": pod.name, "POD_HOSTNAME": pod.hostname,
           "POD_HOSTS_SELF": self_line, "POD_CONTAINER": c["name"], "POD_RESTART_POLICY": pod.restart_policy,
           "POD_GRACE": str(pod.spec.get("terminationGracePeriodSeconds", 30)),
           "POD_FAIL_ON_EXIT": " ".join(str(x) for x in pod.fail_on_exit)}
    for k, v in out.items():
        print(f"{k}={shlex.quote(v)}")
    print("POD_DNS=(" + " ".join(shlex.quote(x) for x in pod.dns) + ")")
    print("POD_CMD=(" + " ".join(shlex.quote(x) for x in argv) + ")")
    print("POD_ENV=(" + " ".join(shlex.quote(f"{k}={v}") for k, v in env.items()) + ")")


if __name__ == "__main__":
    main()
