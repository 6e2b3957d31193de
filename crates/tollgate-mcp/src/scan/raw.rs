//! The borrowed shapes the body scan deserializes, and the depth-limited
//! skip for every value it does not read.
//!
//! The visitors are written by hand rather than derived: a derive skips
//! unknown fields with `serde::de::IgnoredAny`, which serde_json walks with
//! an iterative skipper that has no nesting limit, so a body of 10,000
//! nested arrays would pass the scan and reach the upstream. Here every
//! skipped value is a [`Skip`], which descends through `deserialize_any`
//! and so counts against serde_json's recursion limit (128 levels). Skipped
//! strings are visited borrowed; nothing is allocated for them (escaped
//! strings reuse the parser's scratch buffer).
//!
//! Objects are read with `deserialize_map`: unlike a derived struct, an
//! array is not accepted in place of `params` or `_meta`, so positional
//! params cannot be mistaken for a named tool. A key the scan reads may
//! appear once only, so a body cannot show the gateway one value and the
//! upstream another.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

/// Any JSON value, validated and discarded within the recursion limit.
pub(crate) struct Skip;

impl<'de> Deserialize<'de> for Skip {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Skip, D::Error> {
        d.deserialize_any(SkipVisitor)
    }
}

struct SkipVisitor;

impl<'de> Visitor<'de> for SkipVisitor {
    type Value = Skip;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_str<E>(self, _: &str) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_unit<E>(self) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Skip, A::Error> {
        while seq.next_element::<Skip>()?.is_some() {}
        Ok(Skip)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Skip, A::Error> {
        while map.next_entry::<Skip, Skip>()?.is_some() {}
        Ok(Skip)
    }
}

/// A string value, borrowed from the body unless it holds escapes.
struct Str<'de>(Cow<'de, str>);

/// A value kept when it is a string and skipped (within the recursion
/// limit) otherwise: for values the scan only reports, never decides on.
struct MaybeStr<'de>(Option<Cow<'de, str>>);

impl<'de> Deserialize<'de> for MaybeStr<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<MaybeStr<'de>, D::Error> {
        d.deserialize_any(MaybeStrVisitor)
    }
}

struct MaybeStrVisitor;

impl<'de> Visitor<'de> for MaybeStrVisitor {
    type Value = MaybeStr<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<MaybeStr<'de>, E> {
        Ok(MaybeStr(Some(Cow::Borrowed(v))))
    }

    fn visit_str<E>(self, v: &str) -> Result<MaybeStr<'de>, E> {
        Ok(MaybeStr(Some(Cow::Owned(v.to_owned()))))
    }

    fn visit_bool<E>(self, _: bool) -> Result<MaybeStr<'de>, E> {
        Ok(MaybeStr(None))
    }

    fn visit_i64<E>(self, _: i64) -> Result<MaybeStr<'de>, E> {
        Ok(MaybeStr(None))
    }

    fn visit_u64<E>(self, _: u64) -> Result<MaybeStr<'de>, E> {
        Ok(MaybeStr(None))
    }

    fn visit_f64<E>(self, _: f64) -> Result<MaybeStr<'de>, E> {
        Ok(MaybeStr(None))
    }

    fn visit_unit<E>(self) -> Result<MaybeStr<'de>, E> {
        Ok(MaybeStr(None))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<MaybeStr<'de>, A::Error> {
        SkipVisitor.visit_seq(seq).map(|_| MaybeStr(None))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<MaybeStr<'de>, A::Error> {
        SkipVisitor.visit_map(map).map(|_| MaybeStr(None))
    }
}

impl<'de> Deserialize<'de> for Str<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Str<'de>, D::Error> {
        d.deserialize_str(StrVisitor)
    }
}

struct StrVisitor;

impl<'de> Visitor<'de> for StrVisitor {
    type Value = Str<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Str<'de>, E> {
        Ok(Str(Cow::Borrowed(v)))
    }

    fn visit_str<E>(self, v: &str) -> Result<Str<'de>, E> {
        Ok(Str(Cow::Owned(v.to_owned())))
    }
}

/// The keys of one object shape; every other key is `Other`.
trait Field: Sized {
    fn of(key: &str) -> Self;
}

/// A key, matched after unescaping (`"\u006dethod"` is `method`).
struct Key<K>(K);

impl<'de, K: Field> Deserialize<'de> for Key<K> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Key<K>, D::Error> {
        d.deserialize_identifier(KeyVisitor(PhantomData)).map(Key)
    }
}

struct KeyVisitor<K>(PhantomData<K>);

impl<K: Field> Visitor<'_> for KeyVisitor<K> {
    type Value = K;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object key")
    }

    fn visit_str<E>(self, v: &str) -> Result<K, E> {
        Ok(K::of(v))
    }
}

/// Read the value of a key the scan uses. `T` is an `Option`, so a `null`
/// value still counts as seen; a second copy of the key is an error.
fn once<'de, A: MapAccess<'de>, T: Deserialize<'de>>(
    map: &mut A,
    slot: &mut Option<T>,
    name: &'static str,
) -> Result<(), A::Error> {
    if slot.is_some() {
        return Err(de::Error::duplicate_field(name));
    }
    *slot = Some(map.next_value()?);
    Ok(())
}

/// Implement `Deserialize` for an object shape through `deserialize_map`.
macro_rules! object {
    ($ty:ident, $visitor:ident, $expecting:literal) => {
        impl<'de> Deserialize<'de> for $ty<'de> {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<$ty<'de>, D::Error> {
                d.deserialize_map($visitor)
            }
        }

        struct $visitor;

        impl<'de> Visitor<'de> for $visitor {
            type Value = $ty<'de>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str($expecting)
            }

            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<$ty<'de>, A::Error> {
                $ty::read(map)
            }
        }
    };
}

/// One JSON-RPC message, as far as the scan reads it.
pub(super) struct RawMessage<'a> {
    /// The id's exact JSON text (any JSON value; checked by the caller).
    pub(super) id: Option<&'a RawValue>,
    pub(super) method: Option<Cow<'a, str>>,
    pub(super) params: Option<RawParams<'a>>,
    /// A non-null `result` or `error` is present.
    pub(super) answer: bool,
}

enum MessageField {
    Id,
    Method,
    Params,
    Result,
    Error,
    Other,
}

impl Field for MessageField {
    fn of(key: &str) -> MessageField {
        match key {
            "id" => MessageField::Id,
            "method" => MessageField::Method,
            "params" => MessageField::Params,
            "result" => MessageField::Result,
            "error" => MessageField::Error,
            _ => MessageField::Other,
        }
    }
}

object!(RawMessage, MessageVisitor, "a JSON-RPC message object");

impl<'de> RawMessage<'de> {
    fn read<A: MapAccess<'de>>(mut map: A) -> Result<RawMessage<'de>, A::Error> {
        let (mut id, mut method, mut params) = (None, None::<Option<Str<'de>>>, None);
        let (mut result, mut error) = (None::<Option<Skip>>, None::<Option<Skip>>);
        while let Some(Key(field)) = map.next_key()? {
            match field {
                MessageField::Id => once(&mut map, &mut id, "id")?,
                MessageField::Method => once(&mut map, &mut method, "method")?,
                MessageField::Params => once(&mut map, &mut params, "params")?,
                MessageField::Result => once(&mut map, &mut result, "result")?,
                MessageField::Error => once(&mut map, &mut error, "error")?,
                MessageField::Other => map.next_value::<Skip>().map(drop)?,
            }
        }
        Ok(RawMessage {
            id: id.flatten(),
            method: method.flatten().map(|s| s.0),
            params: params.flatten(),
            answer: result.flatten().is_some() || error.flatten().is_some(),
        })
    }
}

/// `params`, as far as the scan reads it.
pub(super) struct RawParams<'a> {
    pub(super) name: Option<Cow<'a, str>>,
    pub(super) uri: Option<Cow<'a, str>>,
    pub(super) task_id: Option<Cow<'a, str>>,
    /// `params.protocolVersion` when it is a string (what a legacy
    /// `initialize` offers).
    pub(super) protocol_version: Option<Cow<'a, str>>,
    pub(super) meta: Option<RawMeta<'a>>,
}

enum ParamsField {
    Name,
    Uri,
    TaskId,
    ProtocolVersion,
    Meta,
    Other,
}

impl Field for ParamsField {
    fn of(key: &str) -> ParamsField {
        match key {
            "name" => ParamsField::Name,
            "uri" => ParamsField::Uri,
            "taskId" => ParamsField::TaskId,
            "protocolVersion" => ParamsField::ProtocolVersion,
            "_meta" => ParamsField::Meta,
            _ => ParamsField::Other,
        }
    }
}

object!(RawParams, ParamsVisitor, "a params object");

impl<'de> RawParams<'de> {
    fn read<A: MapAccess<'de>>(mut map: A) -> Result<RawParams<'de>, A::Error> {
        let (mut name, mut uri, mut task_id) = (None::<Option<Str<'de>>>, None::<Option<Str<'de>>>, None);
        let (mut meta, mut protocol_version) = (None, None::<MaybeStr<'de>>);
        while let Some(Key(field)) = map.next_key()? {
            match field {
                ParamsField::Name => once(&mut map, &mut name, "name")?,
                ParamsField::Uri => once(&mut map, &mut uri, "uri")?,
                ParamsField::TaskId => once(&mut map, &mut task_id, "taskId")?,
                ParamsField::ProtocolVersion => once(&mut map, &mut protocol_version, "protocolVersion")?,
                ParamsField::Meta => once(&mut map, &mut meta, "_meta")?,
                ParamsField::Other => map.next_value::<Skip>().map(drop)?,
            }
        }
        let text = |s: Option<Option<Str<'de>>>| s.flatten().map(|s| s.0);
        Ok(RawParams {
            name: text(name),
            uri: text(uri),
            task_id: text(task_id),
            protocol_version: protocol_version.and_then(|v| v.0),
            meta: meta.flatten(),
        })
    }
}

/// `params._meta`, as far as the scan reads it.
pub(super) struct RawMeta<'a> {
    pub(super) protocol_version: Option<Cow<'a, str>>,
    pub(super) traceparent: Option<Cow<'a, str>>,
}

enum MetaField {
    ProtocolVersion,
    Traceparent,
    Other,
}

impl Field for MetaField {
    fn of(key: &str) -> MetaField {
        match key {
            "io.modelcontextprotocol/protocolVersion" => MetaField::ProtocolVersion,
            "traceparent" => MetaField::Traceparent,
            _ => MetaField::Other,
        }
    }
}

object!(RawMeta, MetaVisitor, "a _meta object");

impl<'de> RawMeta<'de> {
    fn read<A: MapAccess<'de>>(mut map: A) -> Result<RawMeta<'de>, A::Error> {
        let (mut version, mut traceparent) = (None::<Option<Str<'de>>>, None::<Option<Str<'de>>>);
        while let Some(Key(field)) = map.next_key()? {
            match field {
                MetaField::ProtocolVersion => {
                    once(&mut map, &mut version, "io.modelcontextprotocol/protocolVersion")?;
                }
                MetaField::Traceparent => once(&mut map, &mut traceparent, "traceparent")?,
                MetaField::Other => map.next_value::<Skip>().map(drop)?,
            }
        }
        Ok(RawMeta {
            protocol_version: version.flatten().map(|s| s.0),
            traceparent: traceparent.flatten().map(|s| s.0),
        })
    }
}
