#!/usr/bin/python3
"""Turns a settings schema (SRC/**/NAME.settings.yaml) into the static `spec()` of its settings
struct, which returns its runtime::SettingsSpec: the keys of an application's configuration, each
with its kind, help, default and bounds, and the member of the struct it is read into.

    settings_spec.py SCHEMA OUT.cpp

A schema (docs/architecture.md, "Settings schemas"):

    header: apps/roundtrip.hpp       # declares the struct
    namespace: daqflow::apps
    settings: RoundTripSettings      # the struct the keys are read into
    includes: [...]                  # more headers the parts below need (optional)
    keys:
      peer: {kind: app_ref, help: the other roundtrip application}
      min_size: {kind: integer, help: first message size in bytes, default: 64,
                 range: [0, 4194304]}

A schema of an application type's settings also describes the type, whose registry entry
(runtime::AppType, from the function TYPE_type()) it becomes:

    application:
      type: roundtrip                # the name configurations give
      class: RoundTrip               # the C++ class (runtime::ApplicationWith<RoundTrip, ...>)
      help: Round-trip benchmark...
      enable_rank: 0                 # AppType::enable_rank
      peers: [peer]                  # the keys naming where it sends (AppType::peer_params)
      survivable: false              # AppType::survivable, auxiliary likewise
      fold_results: true             # the class has fold_results (after_loss and host_needs
                                     # likewise)

A key is read into the member of its name (`member:` says another). Its kind is one of integer,
number, boolean, string, app_ref, app_ref_list, integer_list or object; `default:` (absent: the
key is required; lists, mappings and null stand as JSON), `range: [lo, hi]`, `at_least: lo` and
`one_of: [...]` bound it. An object key reads a member struct: by `fields:` written inline (its
C++ type in `type:`) or by another spec (`spec:`, a C++ expression). Two more forms take C++
expressions: `include: EXPR` reads a part's keys at this level into the member, `param: EXPR`
binds a ParamSpec made elsewhere. `replaces: {keys: [...], how: TEXT}` names the older keys a
key took over and how the old forms are written now, for the errors about them.
"""

import json
import sys

import yaml

KINDS = {"integer", "number", "boolean", "string", "app_ref", "app_ref_list", "integer_list",
         "object"}
ATTRIBUTES = {"kind", "help", "default", "range", "at_least", "one_of", "member", "fields",
              "type", "spec", "include", "param", "replaces"}


TOP = {"header", "namespace", "settings", "includes", "application", "keys"}
APPLICATION = {"type", "class", "help", "enable_rank", "peers", "survivable", "auxiliary",
               "fold_results", "after_loss", "host_needs"}


class SchemaError(Exception):
    pass


def cpp_string(text):
    return json.dumps(text, ensure_ascii=False)


def cpp_number(value, where):
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise SchemaError(f"{where}: a bound is a number or a C++ expression, not {value!r}")
    return repr(float(value)) if isinstance(value, float) else str(value)


def default_call(value, kind):
    if isinstance(value, bool):
        return f".default_value({'true' if value else 'false'})"
    if isinstance(value, int):
        return f".default_value(std::int64_t{{{value}}})"
    if isinstance(value, float):
        return f".default_value({value!r})"
    if isinstance(value, str) and kind in ("string", "app_ref"):
        return f".default_value({cpp_string(value)})"
    return f".default_json_text({cpp_string(json.dumps(value, separators=(',', ':')))})"


def param_spec(name, key, where):
    kind = key.get("kind")
    if kind not in KINDS or kind == "object":
        raise SchemaError(f"{where}: kind must be one of {sorted(KINDS)}, not {kind!r}")
    if "help" not in key:
        raise SchemaError(f"{where}: every key needs its help")
    text = f"runtime::ParamSpec::{kind}({cpp_string(name)}, {cpp_string(key['help'])})"
    if "default" in key:
        text += default_call(key["default"], kind)
    if "range" in key:
        bounds = key["range"]
        if not isinstance(bounds, list) or len(bounds) != 2:
            raise SchemaError(f"{where}: range is [lo, hi]")
        text += f".range({cpp_number(bounds[0], where)}, {cpp_number(bounds[1], where)})"
    if "at_least" in key:
        text += f".at_least({cpp_number(key['at_least'], where)})"
    if "one_of" in key:
        text += ".one_of({" + ", ".join(cpp_string(str(v)) for v in key["one_of"]) + "})"
    return text


def chain(settings, keys, where, nested):
    """The SettingsSpec<settings> expression; nested object specs are added to `nested`."""
    if not isinstance(keys, dict) or not keys:
        raise SchemaError(f"{where}: keys is a mapping of at least one key")
    lines = [f"runtime::SettingsSpec<{settings}>()"]
    for name, key in keys.items():
        here = f"{where}.{name}"
        if not isinstance(key, dict):
            raise SchemaError(f"{here}: a key is a mapping")
        unknown = set(key) - ATTRIBUTES
        if unknown:
            raise SchemaError(f"{here}: unknown attribute(s) {sorted(unknown)}")
        member = f"&{settings}::{key.get('member', name)}"
        if "include" in key:
            lines.append(f".include({key['include']}, {member})")
        elif "param" in key:
            lines.append(f".bind({key['param']}, {member})")
        elif key.get("kind") == "object":
            if "fields" in key:
                if "type" not in key:
                    raise SchemaError(f"{here}: an object with fields needs its C++ type")
                fields = f"{key.get('member', name)}_fields"
                nested.append((fields, chain(key["type"], key["fields"], here, nested)))
            elif "spec" in key:
                fields = key["spec"]
            else:
                raise SchemaError(f"{here}: an object key has fields or a spec")
            help_text = cpp_string(key.get("help", ""))
            lines.append(f".bind({cpp_string(name)}, {help_text}, {fields}, {member})")
        else:
            lines.append(f".bind({param_spec(name, key, here)}, {member})")
        if "replaces" in key:
            old = key["replaces"]
            if not isinstance(old, dict) or set(old) != {"keys", "how"}:
                raise SchemaError(f"{here}: replaces is {{keys: [...], how: TEXT}}")
            names = ", ".join(cpp_string(str(k)) for k in old["keys"])
            lines.append(f".replacing({{{names}}}, {cpp_string(old['how'])})")
    return "\n      ".join(lines)


def registry_entry(app, keys, where):
    """The function returning the application type's runtime::AppType."""
    unknown = set(app) - APPLICATION
    if unknown:
        raise SchemaError(f"{where}: unknown attribute(s) {sorted(unknown)}")
    for field in ("type", "class", "help"):
        if field not in app:
            raise SchemaError(f"{where}: no {field}")
    cls = app["class"]
    lines = [f"runtime::AppType {app['type']}_type() {{",
             f"  runtime::AppType t = runtime::app_type<{cls}>({cpp_string(app['type'])}, "
             f"{cpp_string(app['help'])});",
             f"  t.enable_rank = {int(app.get('enable_rank', 0))};"]
    peers = app.get("peers", [])
    for peer in peers:
        if keys.get(peer, {}).get("kind") not in ("app_ref", "app_ref_list"):
            raise SchemaError(f"{where}.peers: '{peer}' is no app_ref or app_ref_list key")
    if peers:
        lines.append("  t.peer_params = {" + ", ".join(cpp_string(p) for p in peers) + "};")
    for flag in ("survivable", "auxiliary"):
        if app.get(flag, False):
            lines.append(f"  t.{flag} = true;")
    for hook in ("fold_results", "after_loss", "host_needs"):
        if app.get(hook, False):
            lines.append(f"  t.{hook} = &{cls}::{hook};")
    lines += ["  return t;", "}", ""]
    return lines


def generate(path):
    with open(path, encoding="utf-8") as f:
        schema = yaml.safe_load(f)
    if not isinstance(schema, dict):
        raise SchemaError(f"{path}: a schema is a mapping")
    unknown = set(schema) - TOP
    if unknown:
        raise SchemaError(f"{path}: unknown field(s) {sorted(unknown)}")
    for field in ("header", "namespace", "settings", "keys"):
        if field not in schema:
            raise SchemaError(f"{path}: no {field}")
    nested = []
    body = chain(schema["settings"], schema["keys"], f"{path}: keys", nested)
    includes = [schema["header"], *schema.get("includes", [])]
    out = [f"// Made from {path.split('/src/')[-1]} by cmake/settings_spec.py: edit that file.",
           "#include <cstdint>", ""]
    out += [f'#include "{h}"' for h in includes]
    out += ["", f"namespace {schema['namespace']} {{", "",
            f"const runtime::SettingsSpec<{schema['settings']}>& {schema['settings']}::spec() {{"]
    for name, expr in nested:
        out.append(f"  static const auto {name} =\n      {expr};")
    out += [f"  static const auto spec =\n      {body};", "  return spec;", "}", ""]
    if "application" in schema:
        out += registry_entry(schema["application"], schema["keys"], f"{path}: application")
    out += [f"}}  // namespace {schema['namespace']}", ""]
    return "\n".join(out)


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: settings_spec.py SCHEMA OUT.cpp")
    try:
        text = generate(sys.argv[1])
    except (SchemaError, yaml.YAMLError, OSError) as e:
        sys.exit(f"settings_spec.py: {e}")
    with open(sys.argv[2], "w", encoding="utf-8") as f:
        f.write(text)


if __name__ == "__main__":
    main()
