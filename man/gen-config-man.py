#!/usr/bin/env python3
"""gen-config-man.py — writes fencegate.json(5) to stdout from the one list
of configuration keys, the "## Keys" table of policy/README.md (which a unit
test keeps equal to the key table in policy/policy_schema.c). The page is
committed; `make man-check` fails when it is not what this script prints.

    man/gen-config-man.py > man/fencegate.json.5"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VERSION = "0.1.0"


def roff(text):
    """Markdown-ish table text to roff: code spans bold, escapes done."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    text = re.sub(r"`([^`]*)`", r"\\fB\1\\fR", text)
    return text


def line(text):
    return "\\&" + text if text[:1] in (".", "'") else text


def keys():
    md = open(os.path.join(ROOT, "policy", "README.md"), encoding="utf-8").read()
    section = md.split("\n## Keys\n", 1)[1].split("\n## ", 1)[0]
    rows = []
    for raw in section.splitlines():
        if not raw.startswith("| `"):
            continue
        cells = [c.strip() for c in raw.strip().strip("|").split(" | ")]
        if len(cells) != 5:
            sys.exit("gen-config-man: a Keys row without 5 cells: " + raw)
        rows.append(cells)
    if not rows:
        sys.exit("gen-config-man: no keys found in policy/README.md")
    return rows


def main():
    out = [
        '.TH FENCEGATE.JSON 5 "2026-12-04" "fencegate %s" "File Formats"' % VERSION,
        ".SH NAME",
        "fencegate.json \\- the configuration file of fencegate",
        ".SH SYNOPSIS",
        ".B fencegate \\-c",
        ".I /etc/fencegate/fencegate.json",
        ".br",
        ".B fencegate \\-t \\-c",
        ".I /etc/fencegate/fencegate.json",
        ".SH DESCRIPTION",
        "One JSON object.",
        "Unknown keys, a key given twice, wrong types and values out of bounds are",
        "refused, and the error names the key path",
        "(\\fBroutes[1].lock: no lock named \"invoce\"\\fR).",
        "Client secrets are never in the file: \\fBsecret_env\\fR/\\fBtoken_env\\fR",
        "name an environment variable and \\fBsecret_file\\fR/\\fBtoken_file\\fR a",
        "file, read when the file is loaded.",
        "\\fBfencegate \\-t\\fR checks a file and exits 0 (valid) or 1;",
        "SIGHUP reloads it (a bad file is logged and the running configuration stays).",
        ".PP",
        "Durations are milliseconds.",
        "For strings the bounds are lengths, for arrays element counts.",
        "A key path \\fIa\\fB[]\\fI.b\\fR is key \\fIb\\fR of each element of array \\fIa\\fR.",
        ".SH KEYS",
    ]
    for key, typ, default, bounds, meaning in keys():
        out.append(".TP")
        out.append(line("\\fB%s\\fR (%s)" % (roff(key.strip("`")), roff(typ))))
        facts = []
        if default != "—":
            facts.append("default " + roff(default))
        if bounds:
            facts.append(roff(bounds))
        text = roff(meaning)
        if facts:
            text += " [" + "; ".join(facts) + "]"
        out.append(line(text))
    out += [
        ".SH EXAMPLES",
        "A writer and a reader in front of S3:",
        ".PP",
        ".nf",
        ".RS",
        "{",
        '  "listen": ["0.0.0.0:8080"],',
        '  "upstream": {"endpoint": "https://s3.eu\\-west\\-1.amazonaws.com",',
        '               "region": "eu\\-west\\-1"},',
        '  "locks": [{"name": "invoices", "store": "s3://acme\\-billing"}],',
        '  "routes": [{"prefix": "/acme\\-billing/invoices/", "lock": "invoices"}],',
        '  "clients": [',
        '    {"name": "worker1", "access_key": "AKWORKER1", "secret_env": "WORKER1_SECRET",',
        '     "allow": [{"prefix": "/acme\\-billing/invoices/",',
        '                "actions": ["read", "write", "lock"]}]},',
        '    {"name": "reader1", "access_key": "AKREADER1", "secret_env": "READER1_SECRET",',
        '     "allow": [{"prefix": "/acme\\-billing/", "actions": ["read"]}]}',
        "  ]",
        "}",
        ".RE",
        ".fi",
        ".SH FILES",
        ".TP",
        ".I /etc/fencegate/fencegate.json",
        "the file the systemd unit runs",
        ".SH SEE ALSO",
        ".BR fencegate (8),",
        ".BR fencectl (1),",
        ".BR libfencelock (3)",
    ]
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
