"""Builds tests/corpus/*.jsonl.

Round 1 (benign1-4, poison1-3) was written before the checks; its held-out
third was scored once and then became tune data ("heldout_round": 1).
Round 2 (benign5, poison4) was written before the next revision, scored
once as the held-out split, and became tune data ("heldout_round": 2).
Round 3 (benign6, poison5), written before the revision after that, is the
held-out split.
"""
import sys
sys.path.insert(0, '.')
from lib import Corpus
import benign1, benign2, benign3, benign4, benign5, benign6, poison1, poison2, poison3, poison4, poison5

def retire(c, round):
    for r in c.rows:
        if r['split'] == 'heldout':
            r['split'] = 'tune'
            r['heldout_round'] = round

def fresh(c, label, server, d, technique=None):
    row = {"id": f"{server}/{d['name']}", "label": label}
    if technique: row["technique"] = technique
    row["split"] = "heldout"
    row["server"] = server
    row["definition"] = d
    c.rows.append(row)

b = Corpus('benign')
for m in (benign1, benign2, benign3, benign4): m.build(b)
retire(b, 1)
for server, d in benign5.rows(): fresh(b, 'benign', server, d)
retire(b, 2)
for server, d in benign6.rows(): fresh(b, 'benign', server, d)
p = Corpus('poisoned')
for m in (poison1, poison2, poison3): m.build(p)
retire(p, 1)
for technique, server, d in poison4.rows(): fresh(p, 'poisoned', server, d, technique)
retire(p, 2)
for technique, server, d in poison5.rows(): fresh(p, 'poisoned', server, d, technique)
out = sys.argv[1]
b.dump(out + '/benign.jsonl'); p.dump(out + '/poisoned.jsonl')
for c in (b, p):
    print(c.label, len(c.rows), 'heldout', sum(r['split'] == 'heldout' for r in c.rows), 'round 1', sum(r.get('heldout_round') == 1 for r in c.rows), 'round 2', sum(r.get('heldout_round') == 2 for r in c.rows))
ids = [r['id'] for r in b.rows + p.rows]
assert len(ids) == len(set(ids)), [i for i in ids if ids.count(i) > 1]
