//! Tool search for virtual servers in search mode: an in-memory
//! [`ToolIndex`] over the approved tool definitions a virtual server
//! exposes, which `find_tools` asks for the best matches to a query in
//! plain language.
//!
//! Ranking is BM25F. A term's frequency in each field of a definition
//! (exposed name, title, description, argument names, argument text; see
//! `search/fields.rs` for the fields and their weights) is weighted and
//! length-normalised per field, summed into one pseudo-frequency,
//! saturated once (`k1`) and multiplied by the term's inverse document
//! frequency. Terms come from `search/text.rs`: `createIssue`,
//! `create_issue` and "creating issues" all give `creat`, `issu`.
//!
//! A query term of four or more characters also matches the indexed terms
//! it begins, at a discount (`repo` finds `repository`); a definition
//! scores for each query term by its best match only. The sum is scaled by
//! the square root of the share of query terms the definition matched (a
//! coordination factor), so that a tool matching most of a query outranks
//! one that matches a single word of it strongly. There are no synonyms:
//! "spend" does not find "cost".
//!
//! The saturated weight of a term in a definition depends on the
//! definition alone, so the index stores it in the postings at build time:
//! a search walks the postings of the query's terms only (at most
//! [`MAX_QUERY_TERMS`] of them), adds weights into one score per
//! definition, and keeps the top `limit` by a partial sort. The index is
//! rebuilt, not updated, when the catalog changes.
//!
//! Quality is measured on a labelled set (`tests/search_quality.rs` over
//! `tests/fixtures/search/`), cost by `benches/search.rs`.

use std::collections::HashMap;

use serde_json::Value;

mod fields;
mod text;

use fields::{FIELDS, LENGTH_NORM, WEIGHT};

/// BM25 term-frequency saturation.
const K1: f32 = 1.2;

/// What a match of a query term as the beginning of an indexed term counts,
/// relative to an exact match.
const PREFIX_FACTOR: f32 = 0.6;

/// The shortest query term matched as a prefix.
const MIN_PREFIX_LEN: usize = 4;

/// The most indexed terms one query term matches as a prefix.
const MAX_EXPANSIONS: usize = 32;

/// The most distinct terms of one query that are searched for: a query is
/// a few words, and a long one must not cost more than a bounded walk.
pub const MAX_QUERY_TERMS: usize = 32;

/// An in-memory index of tool definitions for `find_tools`.
#[derive(Debug, Clone, Default)]
pub struct ToolIndex {
    /// Term → term id.
    vocabulary: HashMap<Box<str>, u32>,
    /// The vocabulary in lexical order, for prefix matches.
    sorted: Vec<(Box<str>, u32)>,
    /// Term id `t`'s postings are `postings[offsets[t]..offsets[t + 1]]`.
    offsets: Vec<u32>,
    /// Per term, the definitions it occurs in, in build order.
    postings: Vec<Posting>,
    /// How many definitions were indexed.
    docs: usize,
}

/// One definition a term occurs in.
#[derive(Debug, Clone, Copy)]
struct Posting {
    /// Position in build order.
    doc: u32,
    /// The term's BM25F contribution to the definition's score.
    weight: f32,
}

/// A definition's terms while the index is built.
struct DocTerms {
    /// Per term id, its frequency in each field.
    frequencies: Vec<(u32, [f32; FIELDS])>,
    /// Terms per field.
    lengths: [f32; FIELDS],
}

impl ToolIndex {
    /// Index `tools`: (exposed name, the tool's definition JSON as listed:
    /// name, title, description, inputSchema with properties (and their
    /// descriptions), annotations.title).
    pub fn build<'a>(tools: impl IntoIterator<Item = (&'a str, &'a Value)>) -> ToolIndex {
        let mut vocabulary: HashMap<Box<str>, u32> = HashMap::new();
        let docs: Vec<DocTerms> = tools
            .into_iter()
            .map(|(name, def)| doc_terms(name, def, &mut vocabulary))
            .collect();
        let average = average_lengths(&docs);
        let mut lists: Vec<Vec<Posting>> = vec![Vec::new(); vocabulary.len()];
        for (position, doc) in docs.iter().enumerate() {
            let norms = field_norms(&doc.lengths, &average);
            for (term, frequencies) in &doc.frequencies {
                let pseudo: f32 = (0..FIELDS).map(|f| WEIGHT[f] * frequencies[f] / norms[f]).sum();
                let weight = pseudo * (K1 + 1.0) / (K1 + pseudo);
                lists[*term as usize].push(Posting {
                    doc: position as u32,
                    weight,
                });
            }
        }
        let (offsets, postings) = flatten(lists, docs.len());
        let mut sorted: Vec<(Box<str>, u32)> = vocabulary.iter().map(|(t, id)| (t.clone(), *id)).collect();
        sorted.sort_unstable();
        ToolIndex {
            vocabulary,
            sorted,
            offsets,
            postings,
            docs: docs.len(),
        }
    }

    /// The best matches for `query`, best first, at most `limit`, each as
    /// (position in build order, score); only documents with score > 0.
    /// `allowed(pos)` filters (used for per-caller policy) before
    /// truncation. Equal scores keep build order. Only the first
    /// [`MAX_QUERY_TERMS`] distinct terms of the query count.
    pub fn search(&self, query: &str, limit: usize, allowed: impl Fn(usize) -> bool) -> Vec<(usize, f32)> {
        if limit == 0 || self.docs == 0 {
            return Vec::new();
        }
        let (scores, matched, terms) = self.accumulate(query);
        let terms = terms as f32;
        let mut hits: Vec<(usize, f32)> = (0..self.docs)
            .filter(|&pos| scores[pos] > 0.0 && allowed(pos))
            .map(|pos| (pos, scores[pos] * (matched[pos] as f32 / terms).sqrt()))
            .collect();
        let order = |a: &(usize, f32), b: &(usize, f32)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
        if hits.len() > limit {
            hits.select_nth_unstable_by(limit - 1, order);
            hits.truncate(limit);
        }
        hits.sort_unstable_by(order);
        hits
    }

    /// Per definition, the sum of its best match to each query term and
    /// how many query terms it matched; and how many distinct terms the
    /// query has.
    fn accumulate(&self, query: &str) -> (Vec<f32>, Vec<u32>, usize) {
        let mut scores = vec![0.0f32; self.docs];
        let mut matched = vec![0u32; self.docs];
        let mut best = vec![0.0f32; self.docs];
        let mut touched = Vec::new();
        let mut seen: Vec<String> = Vec::new();
        text::terms(query, |term| {
            if seen.len() == MAX_QUERY_TERMS || seen.iter().any(|s| s == term) {
                return;
            }
            seen.push(term.to_owned());
            self.each_match(term, |id, factor| {
                for posting in self.postings_of(id) {
                    let slot = &mut best[posting.doc as usize];
                    if *slot == 0.0 {
                        touched.push(posting.doc);
                    }
                    *slot = slot.max(posting.weight * factor);
                }
            });
            for doc in touched.drain(..) {
                scores[doc as usize] += std::mem::take(&mut best[doc as usize]);
                matched[doc as usize] += 1;
            }
        });
        (scores, matched, seen.len())
    }

    /// How many definitions are indexed.
    pub fn len(&self) -> usize {
        self.docs
    }

    /// Whether no definition is indexed.
    pub fn is_empty(&self) -> bool {
        self.docs == 0
    }

    /// Calls `found` with the term id of `term` (factor 1) and of the
    /// indexed terms it begins (factor [`PREFIX_FACTOR`]).
    fn each_match(&self, term: &str, mut found: impl FnMut(u32, f32)) {
        if let Some(&id) = self.vocabulary.get(term) {
            found(id, 1.0);
        }
        if term.len() < MIN_PREFIX_LEN {
            return;
        }
        let start = self.sorted.partition_point(|(t, _)| t.as_ref() <= term);
        let longer = self.sorted[start..].iter().take_while(|(t, _)| t.starts_with(term));
        for (_, id) in longer.take(MAX_EXPANSIONS) {
            found(*id, PREFIX_FACTOR);
        }
    }

    fn postings_of(&self, id: u32) -> &[Posting] {
        let (start, end) = (self.offsets[id as usize], self.offsets[id as usize + 1]);
        &self.postings[start as usize..end as usize]
    }
}

/// The terms of one definition, adding new ones to `vocabulary`.
fn doc_terms(name: &str, definition: &Value, vocabulary: &mut HashMap<Box<str>, u32>) -> DocTerms {
    let mut frequencies: Vec<(u32, [f32; FIELDS])> = Vec::new();
    let mut slot_of: HashMap<u32, usize> = HashMap::new();
    let mut lengths = [0.0f32; FIELDS];
    fields::texts(name, definition, |field, content| {
        let f = field as usize;
        text::terms(content, |term| {
            let id = match vocabulary.get(term) {
                Some(&id) => id,
                None => {
                    let id = vocabulary.len() as u32;
                    vocabulary.insert(term.into(), id);
                    id
                }
            };
            let slot = *slot_of.entry(id).or_insert_with(|| {
                frequencies.push((id, [0.0; FIELDS]));
                frequencies.len() - 1
            });
            frequencies[slot].1[f] += 1.0;
            lengths[f] += 1.0;
        });
    });
    DocTerms { frequencies, lengths }
}

/// The mean number of terms of each field over all definitions.
fn average_lengths(docs: &[DocTerms]) -> [f32; FIELDS] {
    let mut average = [0.0f32; FIELDS];
    for doc in docs {
        for (sum, len) in average.iter_mut().zip(doc.lengths) {
            *sum += len;
        }
    }
    for sum in &mut average {
        *sum /= docs.len().max(1) as f32;
    }
    average
}

/// Every term's postings in one array, each weight multiplied by the term's
/// inverse document frequency, and where each term's postings begin.
fn flatten(lists: Vec<Vec<Posting>>, docs: usize) -> (Vec<u32>, Vec<Posting>) {
    let mut offsets = Vec::with_capacity(lists.len() + 1);
    let mut postings = Vec::with_capacity(lists.iter().map(Vec::len).sum());
    offsets.push(0);
    for mut list in lists {
        let idf = idf(docs, list.len());
        list.iter_mut().for_each(|p| p.weight *= idf);
        postings.extend(list);
        offsets.push(postings.len() as u32);
    }
    (offsets, postings)
}

/// BM25F's per-field length normalisation of one definition.
fn field_norms(lengths: &[f32; FIELDS], average: &[f32; FIELDS]) -> [f32; FIELDS] {
    let mut norms = [1.0f32; FIELDS];
    for f in 0..FIELDS {
        if average[f] > 0.0 {
            norms[f] = 1.0 - LENGTH_NORM[f] + LENGTH_NORM[f] * lengths[f] / average[f];
        }
    }
    norms
}

/// BM25's inverse document frequency (always positive).
fn idf(docs: usize, containing: usize) -> f32 {
    let (n, df) = (docs as f32, containing as f32);
    (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
}

#[cfg(test)]
mod tests;
