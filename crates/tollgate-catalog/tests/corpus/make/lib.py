import json

def prop(kind, desc=None, **extra):
    p = {"type": kind}
    if desc is not None:
        p["description"] = desc
    p.update(extra)
    return p

def S(desc=None, **kw): return prop("string", desc, **kw)
def I(desc=None, **kw): return prop("integer", desc, **kw)
def N(desc=None, **kw): return prop("number", desc, **kw)
def B(desc=None, **kw): return prop("boolean", desc, **kw)
def A(items, desc=None, **kw): return prop("array", desc, items=items, **kw)
def O(props, desc=None, required=None, **kw):
    p = prop("object", desc, properties=props, **kw)
    if required: p["required"] = required
    return p

def tool(name, description, props=None, required=None, title=None, **extra):
    d = {"name": name}
    if title: d["title"] = title
    d["description"] = description
    schema = {"type": "object", "properties": props or {}}
    if required: schema["required"] = required
    d["inputSchema"] = schema
    d.update(extra)
    return d

class Corpus:
    def __init__(self, label):
        self.label = label
        self.rows = []
        self.counters = {}
    def add(self, group, server, definition, technique=None, kind=None):
        """Split decided at authoring time: every third entry of a group is held out."""
        n = self.counters.get(group, 0)
        self.counters[group] = n + 1
        split = "heldout" if n % 3 == 2 else "tune"
        row = {"id": f"{server}/{definition.get('name')}", "label": self.label}
        if technique: row["technique"] = technique
        row["split"] = split
        row["server"] = server
        if kind: row["kind"] = kind
        row["definition"] = definition
        self.rows.append(row)
    def dump(self, path):
        ids = set()
        with open(path, "w") as f:
            for r in self.rows:
                assert r["id"] not in ids, r["id"]
                ids.add(r["id"])
                f.write(json.dumps(r, ensure_ascii=False) + "\n")
