//! Decision cache keys: [`Lookup`] borrows a request's inputs and is built
//! for every decision without allocating; [`Key`] owns them and is built
//! only to store a decision after a miss.
//!
//! The two hash identically (one function hashes both) and a `Lookup` is
//! [`Equivalent`] to the `Key` made from it, so the cache finds a stored
//! decision from the borrowed inputs. Argument names are compared without
//! ASCII case, as `context.args` names them in lowercase.

use std::hash::{Hash, Hasher};
use std::net::IpAddr;

use quick_cache::Equivalent;
use tollgate_core::Era;

use crate::clock::Local;
use crate::model::Action;
use crate::needs::{Attr, Needs};
use crate::request::Facts;

/// The inputs of a decision that are plain values; a context input is
/// `None` when no policy reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Values {
    principal: u64,
    generation: u64,
    action: Action,
    era: Option<Era>,
    annotations: Option<usize>,
    hour: Option<i64>,
    minute: Option<i64>,
    weekday: Option<i64>,
    client_ip: Option<Option<IpAddr>>,
}

/// A decision's inputs as the request holds them: the lookup key.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Lookup<'a> {
    values: Values,
    route: &'a str,
    name: Option<&'a str>,
    /// The virtual server the call came through: a call through one never
    /// shares a decision with the same call on the route itself.
    virtual_server: Option<&'a str>,
    /// `None` when no policy reads `context.method`.
    method: Option<&'a str>,
    /// `None` when no policy reads `context.args`.
    args: Option<&'a [(&'a str, &'a str)]>,
}

/// A stored key: the inputs of a [`Lookup`], owned, argument names in
/// lowercase.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Key {
    values: Values,
    route: Box<str>,
    name: Option<Box<str>>,
    virtual_server: Option<Box<str>>,
    method: Option<Box<str>>,
    args: Option<OwnedArgs>,
}

/// Argument names (lowercase) and values.
type OwnedArgs = Box<[(Box<str>, Box<str>)]>;

/// Who asks under which policy set: the principal's serial number and the
/// policy generation.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Asker {
    pub(crate) principal: u64,
    pub(crate) generation: u64,
}

impl<'a> Lookup<'a> {
    /// The key of a decision, or `None` when it must not be cached (the
    /// policies read `context.now`, or `context.upstream_grant`, which
    /// changes when the caller connects or disconnects). Holds every input
    /// the policies read.
    pub(crate) fn new(
        needs: Needs,
        asker: Asker,
        action: Action,
        name: Option<&'a str>,
        facts: &Facts<'a>,
        local: Local,
        args: &'a [(&'a str, &'a str)],
    ) -> Option<Lookup<'a>> {
        if needs.has(Attr::Now) || needs.has(Attr::UpstreamGrant) {
            return None;
        }
        let read = |attr| needs.has(attr);
        let values = Values {
            principal: asker.principal,
            generation: asker.generation,
            action,
            era: read(Attr::Era).then_some(facts.era),
            annotations: read(Attr::Annotations).then(|| facts.annotations.unwrap_or_default().bits()),
            hour: read(Attr::Hour).then_some(local.hour),
            minute: read(Attr::Minute).then_some(local.minute),
            weekday: read(Attr::Weekday).then_some(local.weekday),
            client_ip: read(Attr::ClientIp).then_some(facts.client_ip),
        };
        Some(Lookup {
            values,
            route: facts.route,
            name,
            virtual_server: facts.virtual_server,
            method: read(Attr::Method).then_some(facts.method),
            args: read(Attr::Args).then_some(args),
        })
    }

    /// The owned key to store a decision under.
    pub(crate) fn to_key(self) -> Key {
        Key {
            values: self.values,
            route: self.route.into(),
            name: self.name.map(Into::into),
            virtual_server: self.virtual_server.map(Into::into),
            method: self.method.map(Into::into),
            args: self.args.map(|args| {
                args.iter()
                    .map(|(k, v)| (k.to_ascii_lowercase().into_boxed_str(), Box::from(*v)))
                    .collect()
            }),
        }
    }
}

impl Hash for Lookup<'_> {
    fn hash<H: Hasher>(&self, h: &mut H) {
        let texts = [Some(self.route), self.name, self.virtual_server, self.method];
        hash_inputs(h, &self.values, texts, self.args.map(|a| a.iter().copied()));
    }
}

impl Hash for Key {
    fn hash<H: Hasher>(&self, h: &mut H) {
        let texts = [
            Some(&*self.route),
            self.name.as_deref(),
            self.virtual_server.as_deref(),
            self.method.as_deref(),
        ];
        let args = self.args.as_deref().map(|a| a.iter().map(|(k, v)| (&**k, &**v)));
        hash_inputs(h, &self.values, texts, args);
    }
}

/// The one hash of a key's inputs, owned or borrowed.
fn hash_inputs<'s, H: Hasher>(
    h: &mut H,
    values: &Values,
    texts: [Option<&str>; 4],
    args: Option<impl ExactSizeIterator<Item = (&'s str, &'s str)>>,
) {
    values.hash(h);
    texts.hash(h);
    let Some(args) = args else {
        h.write_u8(0);
        return;
    };
    h.write_u8(1);
    h.write_usize(args.len());
    let mut lower = [0u8; 32];
    for (name, value) in args {
        h.write_usize(name.len());
        for chunk in name.as_bytes().chunks(lower.len()) {
            let part = &mut lower[..chunk.len()];
            part.copy_from_slice(chunk);
            part.make_ascii_lowercase();
            h.write(part);
        }
        value.hash(h);
    }
}

impl Equivalent<Key> for Lookup<'_> {
    fn equivalent(&self, key: &Key) -> bool {
        self.values == key.values
            && self.route == &*key.route
            && self.name == key.name.as_deref()
            && self.virtual_server == key.virtual_server.as_deref()
            && self.method == key.method.as_deref()
            && match (self.args, key.args.as_deref()) {
                (None, None) => true,
                (Some(mine), Some(stored)) => {
                    mine.len() == stored.len()
                        && mine
                            .iter()
                            .zip(stored)
                            .all(|((k, v), (sk, sv))| sk.eq_ignore_ascii_case(k) && *v == &**sv)
                }
                _ => false,
            }
    }
}

#[cfg(test)]
mod tests;
