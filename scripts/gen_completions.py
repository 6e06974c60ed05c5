#!/usr/bin/env python3
"""Shell completions (bash, zsh) and a man page for one cact-* tool, generated
from the tool's own --help (and each subcommand's), so they never drift from
the flags the tool really has. Run by the build (cmake/completions.cmake):

    gen_completions.py --tool PATH --name cact-inspect --out-dir DIR

writes DIR/bash/NAME, DIR/zsh/_NAME and DIR/man/NAME.1. The output depends only
on the help text and the version line: the same tool gives the same bytes.
"""
import argparse
import os
import re
import subprocess
import sys

ENTRY = re.compile(r"^  (\S.*?)(?:\s{2,}(.*))?$")


def run_help(tool, words):
    done = subprocess.run([tool, *words, "--help"], capture_output=True, text=True, check=True)
    return done.stdout


def parse_help(text):
    """The help's description, usage tail, options, positionals and subcommands.
    CLI11's layout: sections ("Options:", "Positionals:", "Subcommands:"), entries
    "  NAMES [TYPE]   description"; option groups ("[Option Group: x]") nest
    their own indented "Options:" block."""
    lines = text.splitlines()
    about = lines[0].strip() if lines else ""
    usage = ""
    options, positionals, subcommands = [], [], []
    section = None
    for line in lines[1:]:
        stripped = line.strip()
        if line.startswith("Usage:"):
            # "Usage: /path/to/tool [OPTIONS] ..." -> what follows the program path
            parts = line.split(None, 2)
            usage = parts[2] if len(parts) > 2 else ""
            continue
        if stripped.startswith("[Option Group:") or stripped == "Options:":
            section = "Options"
            continue
        if stripped.endswith(":") and not line.startswith(" "):
            section = stripped[:-1]
            continue
        columns = re.split(r"\s{2,}", stripped, maxsplit=1)
        head, desc = columns[0], (columns[1] if len(columns) > 1 else "")
        if section == "Options" and head.startswith("-"):
            names_part, _, value = head.partition(" ")
            names = [n for n in names_part.split(",") if n.startswith("-")]
            options.append({"names": names, "value": value.strip(), "help": desc.strip()})
        elif section == "Subcommands" and ENTRY.match(line):
            subcommands.append({"name": head, "help": desc.strip()})
        elif section == "Positionals" and ENTRY.match(line):
            positionals.append({"name": head.split()[0], "help": desc.strip()})
    return {"about": about, "usage": usage, "options": options, "positionals": positionals, "subcommands": subcommands}


def bash_script(name, top, subs):
    func = "_" + re.sub(r"[^A-Za-z0-9_]", "_", name)
    def words(spec):
        return " ".join(n for o in spec["options"] for n in o["names"])
    def valued(spec):
        return "|".join(n for o in spec["options"] if o["value"] for n in o["names"])
    out = [f"# bash completion for {name} (generated from {name} --help by scripts/gen_completions.py)",
           f"{func}() {{",
           "  local cur prev words cword",
           "  _init_completion || return",
           "  local sub=\"\" i",
           "  for ((i = 1; i < cword; i++)); do",
           "    case \"${words[i]}\" in",
           *(f"      {s['name']}) sub={s['name']}; break ;;" for s in top["subcommands"]),
           "    esac",
           "  done",
           "  local opts valued",
           "  case \"$sub\" in"]
    for s in top["subcommands"]:
        spec = subs[s["name"]]
        out.append(f"    {s['name']}) opts=\"{words(spec)}\"; valued=\"{valued(spec)}\" ;;")
    out.append(f"    *) opts=\"{words(top)}\"; valued=\"{valued(top)}\" ;;")
    out.append("  esac")
    out += ["  if [[ -n \"$valued\" && \"|$valued|\" == *\"|$prev|\"* ]]; then",
            "    _filedir",
            "    return",
            "  fi",
            "  if [[ \"$cur\" == -* ]]; then",
            "    COMPREPLY=($(compgen -W \"$opts\" -- \"$cur\"))",
            "    return",
            "  fi"]
    if top["subcommands"]:
        names = " ".join(s["name"] for s in top["subcommands"])
        out += ["  if [[ -z \"$sub\" ]]; then",
                f"    COMPREPLY=($(compgen -W \"{names}\" -- \"$cur\"))",
                "    [[ ${#COMPREPLY[@]} -gt 0 ]] && return",
                "  fi"]
    out += ["  _filedir", "}", f"complete -F {func} {name}", ""]
    return "\n".join(out)


def zsh_quote(text):
    return text.replace("\\", "\\\\").replace("'", "'\\''").replace("[", "\\[").replace("]", "\\]").replace(":", "\\:")


def zsh_specs(spec):
    specs = []
    for o in spec["options"]:
        desc = zsh_quote(o["help"])
        value = ":" + zsh_quote(o["value"].lower() or "value") + ":_files" if o["value"] else ""
        if len(o["names"]) > 1:
            group = " ".join(o["names"])
            braces = ",".join(o["names"])
            specs.append(f"'({group})'{{{braces}}}'[{desc}]{value}'")
        else:
            specs.append(f"'{o['names'][0]}[{desc}]{value}'")
    return specs


def zsh_script(name, top, subs):
    func = "_" + re.sub(r"[^A-Za-z0-9_]", "_", name)
    out = [f"#compdef {name}", f"# zsh completion for {name} (generated from {name} --help by scripts/gen_completions.py)", ""]
    if not top["subcommands"]:
        out.append(f"{func}() {{")
        out.append("  _arguments -s \\")
        for s in zsh_specs(top):
            out.append(f"    {s} \\")
        out.append("    '*:file:_files'")
        out.append("}")
    else:
        out.append(f"{func}() {{")
        out.append("  local -a commands")
        out.append("  commands=(")
        for s in top["subcommands"]:
            out.append(f"    '{s['name']}:" + s["help"].replace("'", "'\\''") + "'")  # _describe: the first ':' separates
        out.append("  )")
        out.append("  if (( CURRENT == 2 )); then")
        out.append("    _describe command commands")
        out.append("    return")
        out.append("  fi")
        out.append("  case ${words[2]} in")
        for s in top["subcommands"]:
            out.append(f"    {s['name']})")
            out.append("      shift words; (( CURRENT-- ))")
            out.append("      _arguments -s \\")
            for spec in zsh_specs(subs[s["name"]]):
                out.append(f"        {spec} \\")
            out.append("        '*:file:_files' ;;")
        out.append("  esac")
        out.append("}")
    out += ["", f'{func} "$@"', ""]
    return "\n".join(out)


def roff(text):
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return ("\\&" + text) if text.startswith((".", "'")) else text


def man_options(spec):
    out = []
    for o in spec["options"]:
        names = ", ".join("\\fB" + roff(n) + "\\fR" for n in o["names"])
        value = " \\fI" + roff(o["value"]) + "\\fR" if o["value"] else ""
        out += [".TP", names + value, roff(o["help"])]
    return out


def man_page(name, version, top, subs):
    out = [f'.TH {name.upper()} 1 "" "{roff(version)}" "User Commands"', ".SH NAME", f"{roff(name)} \\- {roff(top['about'].split(': ', 1)[-1])}",
           ".SH SYNOPSIS", f"\\fB{roff(name)}\\fR {roff(top['usage'])}"]
    for s in top["subcommands"]:
        out.append(f".br\n\\fB{roff(name)} {roff(s['name'])}\\fR {roff(subs[s['name']]['usage'].split(' ', 1)[-1] if ' ' in subs[s['name']]['usage'] else '')}")
    out += [".SH DESCRIPTION", roff(top["about"])]
    if top["positionals"]:
        out.append(".SH ARGUMENTS")
        for p in top["positionals"]:
            out += [".TP", "\\fI" + roff(p["name"]) + "\\fR", roff(p["help"])]
    out.append(".SH OPTIONS")
    out += man_options(top)
    for s in top["subcommands"]:
        spec = subs[s["name"]]
        out += [f".SH COMMAND {roff(s['name']).upper()}", roff(s["help"])]
        for p in spec["positionals"]:
            out += [".TP", "\\fI" + roff(p["name"]) + "\\fR", roff(p["help"])]
        out += man_options(spec)
    out += [".SH EXIT STATUS", "0 success; 1 bad input or failed work (also: standard output could not be written); 2 bad usage.",
            ".SH SEE ALSO", "docs/GUIDE.md in the cact sources; \\fBcact\\-inspect\\fR(1), \\fBcact\\-build\\fR(1), \\fBcact\\-quant\\fR(1), "
            "\\fBcact\\-slice\\fR(1), \\fBcact\\-run\\fR(1), \\fBcact\\-golden\\fR(1)", ""]
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tool", required=True)
    ap.add_argument("--name", required=True)
    ap.add_argument("--out-dir", required=True)
    a = ap.parse_args()
    top = parse_help(run_help(a.tool, []))
    subs = {s["name"]: parse_help(run_help(a.tool, [s["name"]])) for s in top["subcommands"]}
    if not top["options"]:
        sys.exit(f"gen_completions.py: {a.name} --help lists no options: not CLI11's help layout")
    version = subprocess.run([a.tool, "--version"], capture_output=True, text=True, check=True).stdout.splitlines()[0]
    version = "cact " + version.split()[1]  # the project version only: the git revision would make the page change per commit
    for sub, fname, text in (("bash", a.name, bash_script(a.name, top, subs)), ("zsh", "_" + a.name, zsh_script(a.name, top, subs)),
                             ("man", a.name + ".1", man_page(a.name, version, top, subs))):
        os.makedirs(os.path.join(a.out_dir, sub), exist_ok=True)
        with open(os.path.join(a.out_dir, sub, fname), "w", encoding="utf-8") as f:
            f.write(text)


if __name__ == "__main__":
    main()
