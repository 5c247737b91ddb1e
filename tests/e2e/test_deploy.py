#!/usr/bin/env python3
"""The deploy/ files, checked as far as this machine allows (no registry to
pull a base image from, no cluster):

- deploy/kubernetes/: every manifest parses (PyYAML), the kustomization
  names each file, and the fields that make it work are there and agree
  with each other (replicas, selectors, the probes on /_fence/ready and /_fence/live, the
  Prometheus annotations, the ConfigMap mount behind -c, the PDB, a
  non-root read-only container, a grace period longer than the drain);
  the ConfigMap's fencegate.json passes `fencegate -t` with exactly the
  variables the Deployment fills from Secrets, and fails without them;
  `kubectl kustomize` renders the folder where kubectl is installed.
- deploy/container/Containerfile: multi-stage on Debian 12, the build stage
  installs deploy/install-deps.sh's build set, the runtime stage installs
  the Debian package of every shared library the built binaries need, runs
  as the non-root user the Deployment expects, and checks /_fence/live.
- the systemd unit: `make install PREFIX=tmp` installs it with the
  installed paths, Type=exec, state and runtime directories, and
  `systemd-analyze verify` accepts it.
- deploy/grafana/fencegate.json: every metric a panel queries is a family
  a running fencegate serves on /_fence/metrics (no Grafana here to load
  it; the JSON is parsed and its queries read)."""
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import harness  # noqa: E402

KDIR = os.path.join(harness.ROOT, "deploy", "kubernetes")
CONTAINERFILE = os.path.join(harness.ROOT, "deploy", "container", "Containerfile")


def manifests():
    try:
        import yaml
    except ImportError:
        raise AssertionError("PyYAML is needed to check deploy/kubernetes (it comes with moto)")
    docs = {}
    for name in sorted(os.listdir(KDIR)):
        if name.endswith(".yaml"):
            with open(os.path.join(KDIR, name)) as f:
                for d in yaml.safe_load_all(f):
                    assert isinstance(d, dict) and d.get("kind"), (name, d)
                    docs.setdefault(d["kind"], []).append((name, d))
    return docs


def one(docs, kind):
    assert len(docs.get(kind, [])) == 1, "want one %s, have %r" % (kind, docs.get(kind))
    return docs[kind][0][1]


def container(dep):
    cs = dep["spec"]["template"]["spec"]["containers"]
    assert len(cs) == 1, cs
    return cs[0]


def config_of(docs):
    cm = one(docs, "ConfigMap")
    return cm, json.loads(cm["data"]["fencegate.json"])


def secret_envs(c):
    return {e["name"]: e["valueFrom"]["secretKeyRef"] for e in c.get("env", [])
            if "secretKeyRef" in e.get("valueFrom", {})}


def t_kustomization(docs, r):
    kust = one(docs, "Kustomization")
    files = {n for n in os.listdir(KDIR) if n.endswith(".yaml")} - {"kustomization.yaml"}
    assert set(kust["resources"]) == files, (kust["resources"], files)
    for kind in ("ConfigMap", "Deployment", "Service", "PodDisruptionBudget"):
        one(docs, kind)
    if shutil.which("kubectl"):
        p = harness.run(["kubectl", "kustomize", KDIR])
        assert p.returncode == 0, p.stderr
        assert p.stdout.count("\nkind: ") + p.stdout.startswith("kind: ") >= 4, p.stdout[:500]
    else:
        r.skip("kubernetes: kubectl kustomize renders the manifests", "kubectl not installed")


def t_deployment(docs):
    dep = one(docs, "Deployment")
    spec, pod = dep["spec"], dep["spec"]["template"]
    labels = pod["metadata"]["labels"]
    assert dep["apiVersion"] == "apps/v1"
    assert spec["replicas"] >= 2, "N replicas: %r" % spec["replicas"]
    assert spec["selector"]["matchLabels"].items() <= labels.items(), (spec["selector"], labels)
    c = container(dep)
    port = {p["name"]: p["containerPort"] for p in c["ports"]}
    for probe, path in (("readinessProbe", "/_fence/ready"), ("livenessProbe", "/_fence/live")):
        get = c[probe]["httpGet"]
        assert get["path"] == path, (probe, get)
        assert get["port"] in port or get["port"] in port.values(), (probe, get, port)
    ann = pod["metadata"]["annotations"]
    assert ann["prometheus.io/scrape"] == "true", ann
    assert ann["prometheus.io/path"] == "/_fence/metrics", ann
    assert int(ann["prometheus.io/port"]) in port.values(), (ann, port)
    psc, sc = pod["spec"]["securityContext"], c["securityContext"]
    assert psc["runAsNonRoot"] is True and psc["runAsUser"] != 0, psc
    assert sc["readOnlyRootFilesystem"] is True, sc
    assert sc["allowPrivilegeEscalation"] is False and sc["capabilities"]["drop"] == ["ALL"], sc
    assert "memory" in c["resources"]["limits"], c["resources"]
    # -c FILE is the ConfigMap's key, mounted read-only
    args = c["args"]
    cfg_path = args[args.index("-c") + 1]
    mounts = {m["name"]: m for m in c["volumeMounts"]}
    vols = {v["name"]: v for v in pod["spec"]["volumes"]}
    mount = [m for m in mounts.values() if cfg_path.startswith(m["mountPath"].rstrip("/") + "/")]
    assert len(mount) == 1 and mount[0]["readOnly"] is True, (cfg_path, mounts)
    vol = vols[mount[0]["name"]]
    cm, cfg = config_of(docs)
    assert vol["configMap"]["name"] == cm["metadata"]["name"], (vol, cm["metadata"])
    assert os.path.basename(cfg_path) in cm["data"], (cfg_path, list(cm["data"]))
    # the config listens where the probes, the Service and Prometheus look
    listen_ports = {int(a.rsplit(":", 1)[1]) for a in cfg["listen"]}
    assert listen_ports == set(port.values()), (cfg["listen"], port)
    drain_ms = cfg.get("limits", {}).get("drain_timeout_ms", 30000)
    assert pod["spec"]["terminationGracePeriodSeconds"] * 1000 > drain_ms, (
        pod["spec"]["terminationGracePeriodSeconds"], drain_ms)
    # every client secret comes from a Secret, none is written in a manifest
    wanted = {cl["secret_env"] for cl in cfg.get("clients", []) if cl.get("secret_env")}
    assert wanted and wanted <= set(secret_envs(c)), (wanted, secret_envs(c))
    assert "Secret" not in docs, "a Secret with values is in the manifests"
    assert "--check-bucket" in args, "readiness would not wait for the backend self-test"


def t_service_and_pdb(docs):
    dep = one(docs, "Deployment")
    labels = dep["spec"]["template"]["metadata"]["labels"]
    c = container(dep)
    svc = one(docs, "Service")
    assert svc["spec"]["selector"].items() <= labels.items(), (svc["spec"]["selector"], labels)
    names = {p["name"] for p in c["ports"]} | {p["containerPort"] for p in c["ports"]}
    for p in svc["spec"]["ports"]:
        assert p["targetPort"] in names, (p, names)
    pdb = one(docs, "PodDisruptionBudget")
    assert pdb["apiVersion"] == "policy/v1", pdb["apiVersion"]
    assert pdb["spec"]["selector"]["matchLabels"].items() <= labels.items()
    if "maxUnavailable" in pdb["spec"]:
        assert 1 <= pdb["spec"]["maxUnavailable"] < dep["spec"]["replicas"], pdb["spec"]
    else:
        assert 1 <= pdb["spec"]["minAvailable"] < dep["spec"]["replicas"], pdb["spec"]


def t_config_passes_check(docs):
    _, cfg = config_of(docs)
    tmp = harness.TempDir()
    try:
        path = os.path.join(tmp.path, "fencegate.json")
        with open(path, "w") as f:
            json.dump(cfg, f)
        env = {k: v for k, v in os.environ.items()
               if k not in secret_envs(container(one(docs, "Deployment")))}
        p = harness.run([os.path.join(harness.BIN, "fencegate"), "-t", "-c", path], env=env)
        assert p.returncode == 1, "passed without its secrets:\n" + p.stdout + p.stderr
        for name in secret_envs(container(one(docs, "Deployment"))):
            env[name] = "dummy-%s-value" % name.lower()
        p = harness.run([os.path.join(harness.BIN, "fencegate"), "-t", "-c", path], env=env)
        assert p.returncode == 0, p.stdout + p.stderr
        assert "is valid" in p.stdout, p.stdout
    finally:
        tmp.close()


def containerfile_stages():
    with open(CONTAINERFILE) as f:
        text = f.read()
    text = re.sub(r"\\\n", " ", text)  # continued lines as one
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.strip().startswith("#")]
    args = dict(re.match(r"ARG (\w+)=(\S+)", ln).groups() for ln in lines if ln.startswith("ARG "))
    stages = []
    for ln in lines:
        if ln.startswith("FROM "):
            stages.append([ln])
        elif stages:
            stages[-1].append(ln)
    return args, stages


def apt_packages(stage):
    pkgs = set()
    for ln in stage:
        for part in ln.split("apt-get install")[1:]:
            for word in part.split("&&", 1)[0].split():
                if not word.startswith("-"):
                    pkgs.add(word)
    return pkgs


def needed_packages(binary):
    """Debian packages of the shared libraries binary needs (libc6 left out)."""
    p = harness.run(["objdump", "-p", binary])
    assert p.returncode == 0, p.stderr
    sonames = re.findall(r"NEEDED\s+(\S+)", p.stdout)
    paths = dict(re.findall(r"^\s*(\S+) => (\S+)", harness.run(["ldd", binary]).stdout, re.M))
    pkgs = set()
    for so in sonames:
        real = os.path.realpath(paths[so])
        for cand in (real, real[4:] if real.startswith("/usr/") else "/usr" + real):
            q = harness.run(["dpkg", "-S", cand])
            if q.returncode == 0:
                pkgs.add(q.stdout.split(":", 1)[0])
                break
        else:
            raise AssertionError("no Debian package owns %s (%s)" % (so, real))
    return pkgs - {"libc6"}


def t_containerfile(docs):
    args, stages = containerfile_stages()
    assert len(stages) >= 2, "not multi-stage"
    for st in stages:
        image = re.sub(r"\$\{(\w+)\}", lambda m: args[m.group(1)], st[0].split()[1])
        assert re.fullmatch(r"debian:12(-slim)?|debian:bookworm(-slim)?", image), image
    build, runtime = stages[0], stages[-1]
    with open(os.path.join(harness.ROOT, "deploy", "install-deps.sh")) as f:
        build_set = set(re.search(r'build="([^"]*)"', f.read()).group(1).split())
    assert build_set <= apt_packages(build), build_set - apt_packages(build)
    have = apt_packages(runtime)
    for binary in ("fencegate", "fencectl"):
        need = needed_packages(os.path.join(harness.BIN, binary))
        assert need <= have, "%s needs %s, not in the runtime stage" % (binary, need - have)
    user = [ln.split()[1] for ln in runtime if ln.startswith("USER ")]
    assert user and user[-1].split(":")[0].isdigit() and user[-1].split(":")[0] != "0", user
    run_as = one(docs, "Deployment")["spec"]["template"]["spec"]["securityContext"]["runAsUser"]
    assert int(user[-1].split(":")[0]) == run_as, (user, run_as)
    health = [ln for ln in runtime if ln.startswith("HEALTHCHECK ")]
    assert len(health) == 1 and "/_fence/live" in health[0], health
    assert "curl" in have, "HEALTHCHECK runs curl"
    entry = [ln for ln in runtime if ln.startswith("ENTRYPOINT ")]
    cmd = [ln for ln in runtime if ln.startswith("CMD ")]
    assert entry and json.loads(entry[-1][11:]) == ["/usr/bin/fencegate"], entry
    c = container(one(docs, "Deployment"))
    cfg_path = c["args"][c["args"].index("-c") + 1]
    assert cmd and json.loads(cmd[-1][4:]) == ["-c", cfg_path], (cmd, cfg_path)
    assert any(ln.startswith("COPY --from=") for ln in runtime), "runtime copies no build output"


def t_systemd_unit(r):
    tmp = harness.TempDir()
    try:
        prefix = os.path.join(tmp.path, "usr")
        p = harness.run(["make", "-s", "-C", harness.ROOT, "install", "CI=true",
                         "PREFIX=" + prefix, "O=" + os.path.dirname(harness.BIN)], timeout=300)
        assert p.returncode == 0, p.stdout + p.stderr
        unit = os.path.join(prefix, "lib", "systemd", "system", "fencegate.service")
        with open(unit) as f:
            text = f.read()
        keys = {}
        for ln in text.splitlines():
            if "=" in ln and not ln.startswith("#"):
                k, v = ln.split("=", 1)
                keys.setdefault(k, []).append(v)
        assert keys["Type"] == ["exec"], keys["Type"]
        assert keys["StateDirectory"] == ["fencegate"], keys.get("StateDirectory")
        assert keys["RuntimeDirectory"] == ["fencegate"], keys.get("RuntimeDirectory")
        assert "@" not in text.replace("$MAINPID", ""), "unsubstituted @...@ in the unit"
        start = keys["ExecStart"][0].split()
        assert start[0] == os.path.join(prefix, "bin", "fencegate"), start
        assert os.access(start[0], os.X_OK), start[0]
        doc = keys["Documentation"][0]
        assert doc.startswith("file://") and os.path.exists(doc[7:]), doc
        if shutil.which("systemd-analyze"):
            v = subprocess.run(["systemd-analyze", "verify", unit], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, timeout=60)
            assert v.returncode == 0, v.stdout
        else:
            r.skip("systemd: systemd-analyze verify", "systemd-analyze not installed")
    finally:
        tmp.close()


DASHBOARD = os.path.join(harness.ROOT, "deploy", "grafana", "fencegate.json")


def t_grafana_dashboard():
    import urllib.request
    with open(DASHBOARD) as f:
        dash = json.load(f)
    exprs = [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]
    assert len(exprs) >= 10, exprs
    queried = set()
    for e in exprs:
        queried.update(re.findall(r"\b((?:fencegate|process)_[a-z_]+)\b", e))
    tmp = harness.TempDir()
    port = harness.free_port()
    proc = subprocess.Popen([os.path.join(harness.BIN, "fencegate"), "--listen",
                             "127.0.0.1:%d" % port, "--data", tmp.path, "--access-log", "off"],
                            stderr=subprocess.DEVNULL)
    try:
        harness.wait_port(port, proc)
        with urllib.request.urlopen("http://127.0.0.1:%d/_fence/metrics" % port,
                                    timeout=10) as r:
            text = r.read().decode()
    finally:
        harness.stop(proc)
        tmp.close()
    types = dict(re.findall(r"^# TYPE (\S+) (\S+)$", text, re.M))
    missing = []
    for name in sorted(queried):
        base = re.sub(r"_(bucket|sum|count)$", "", name)
        if name in types or types.get(base) == "histogram":
            continue
        missing.append(name)
    assert not missing, "the dashboard queries metrics fencegate does not serve: %s" % missing
    for must in ("fencegate_build_info", "process_cpu_seconds_total", "process_open_fds",
                 "fencegate_connections_open", "fencegate_responses_total",
                 "fencegate_lock_store_seconds_bucket", "fencegate_lock_store_errors_total",
                 "fencegate_reloads_total", "fencegate_self_test_passed"):
        assert must in queried, "the dashboard does not show %s" % must


def main():
    r = harness.Runner("e2e deploy")
    docs = manifests()
    r.check("kubernetes: every manifest parses, kustomization names each", t_kustomization, docs,
            r)
    r.check("kubernetes: Deployment replicas, probes, annotations, security, config mount",
            t_deployment, docs)
    r.check("kubernetes: Service and PodDisruptionBudget select the pods", t_service_and_pdb,
            docs)
    r.check("kubernetes: the ConfigMap's config passes fencegate -t with the Secret envs",
            t_config_passes_check, docs)
    r.check("Containerfile: Debian 12 stages, libraries, non-root user, health check",
            t_containerfile, docs)
    r.check("systemd: make install writes the unit, Type=exec, verify", t_systemd_unit, r)
    r.check("grafana: every metric the dashboard queries is served", t_grafana_dashboard)
    return r.finish()


if __name__ == "__main__":
    sys.exit(main())
