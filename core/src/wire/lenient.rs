//! Lenient typed reading: shapes that take what they expect from any JSON and read everything
//! else as "absent", the way `value.get(key).and_then(Value::as_str)` reads a tree — but in one
//! pass over the text, without building the tree.
//!
//! The same `Deserialize` impls read a `&Value` too (serde_json's `&Value` is a deserializer),
//! so a reading of the text and a reading of its tree run the same code. They differ only where
//! a tree cannot: a member written twice (a tree keeps the last). A shape reading an object
//! fails on a repeated member it reads ([`Slot`]), and the caller falls back to the tree.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::Deserializer;
use serde::de::{self, MapAccess, SeqAccess, Visitor};

/// A JSON value read as one shape; every other kind of value reads as `Default`.
pub(crate) trait Shape<'de>: Default {
    fn string(_s: Cow<'de, str>) -> Self {
        Self::default()
    }
    fn seq<A: SeqAccess<'de>>(mut seq: A) -> Result<Self, A::Error> {
        while seq.next_element::<Valid>()?.is_some() {}
        Ok(Self::default())
    }
    fn map<A: MapAccess<'de>>(mut map: A) -> Result<Self, A::Error> {
        while map.next_entry::<Valid, Valid>()?.is_some() {}
        Ok(Self::default())
    }
}

/// Any JSON value, skipped the way a tree reads it: every string decoded (a lone surrogate
/// escape fails), every number parsed (`1e400` fails), nesting limited as for a tree. Never
/// serde's `IgnoredAny`: serde_json skips with a laxer scanner, and a text the shapes accept
/// must be one a tree accepts, or the two readings could differ.
pub(crate) struct Valid;

impl<'de> serde::Deserialize<'de> for Valid {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Valid;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_bool<E>(self, _: bool) -> Result<Valid, E> {
                Ok(Valid)
            }
            fn visit_i64<E>(self, _: i64) -> Result<Valid, E> {
                Ok(Valid)
            }
            fn visit_u64<E>(self, _: u64) -> Result<Valid, E> {
                Ok(Valid)
            }
            fn visit_f64<E>(self, _: f64) -> Result<Valid, E> {
                Ok(Valid)
            }
            fn visit_unit<E>(self) -> Result<Valid, E> {
                Ok(Valid)
            }
            fn visit_none<E>(self) -> Result<Valid, E> {
                Ok(Valid)
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Valid, D::Error> {
                Valid::deserialize(d)
            }
            fn visit_str<E>(self, _: &str) -> Result<Valid, E> {
                Ok(Valid)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Valid, A::Error> {
                while seq.next_element::<Valid>()?.is_some() {}
                Ok(Valid)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Valid, A::Error> {
                while map.next_entry::<Valid, Valid>()?.is_some() {}
                Ok(Valid)
            }
        }
        use serde::Deserialize as _;
        d.deserialize_any(V)
    }
}

/// Read `T` from any JSON value (the body of a shape's `Deserialize`).
pub(crate) fn read<'de, D: Deserializer<'de>, T: Shape<'de>>(d: D) -> Result<T, D::Error> {
    d.deserialize_any(ShapeVisitor(PhantomData))
}

struct ShapeVisitor<T>(PhantomData<T>);

impl<'de, T: Shape<'de>> Visitor<'de> for ShapeVisitor<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<T, E> {
        Ok(T::default())
    }
    fn visit_i64<E>(self, _: i64) -> Result<T, E> {
        Ok(T::default())
    }
    fn visit_u64<E>(self, _: u64) -> Result<T, E> {
        Ok(T::default())
    }
    fn visit_f64<E>(self, _: f64) -> Result<T, E> {
        Ok(T::default())
    }
    fn visit_unit<E>(self) -> Result<T, E> {
        Ok(T::default())
    }
    fn visit_none<E>(self) -> Result<T, E> {
        Ok(T::default())
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<T, D::Error> {
        read(d)
    }
    fn visit_borrowed_str<E>(self, s: &'de str) -> Result<T, E> {
        Ok(T::string(Cow::Borrowed(s)))
    }
    fn visit_str<E>(self, s: &str) -> Result<T, E> {
        Ok(T::string(Cow::Owned(s.to_owned())))
    }
    fn visit_string<E>(self, s: String) -> Result<T, E> {
        Ok(T::string(Cow::Owned(s)))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<T, A::Error> {
        T::seq(seq)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
        T::map(map)
    }
}

/// `impl Deserialize for $t` through its [`Shape`].
macro_rules! shape_deserialize {
    ($t:ident) => {
        impl<'de: 'a, 'a> serde::Deserialize<'de> for $t<'a> {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                $crate::wire::lenient::read(d)
            }
        }
    };
}
pub(crate) use shape_deserialize;

/// A string, or `None` for any other value (`Value::as_str`).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Str<'a>(pub Option<Cow<'a, str>>);

impl<'de: 'a, 'a> Shape<'de> for Str<'a> {
    fn string(s: Cow<'de, str>) -> Self {
        Str(Some(s))
    }
}
shape_deserialize!(Str);

impl<'a> Str<'a> {
    pub(crate) fn as_deref(&self) -> Option<&str> {
        self.0.as_deref()
    }
    pub(crate) fn owned(self) -> Option<String> {
        self.0.map(Cow::into_owned)
    }
}

/// An array's items, each read as `T`; empty for any other value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Seq<T>(pub Vec<T>);

impl<T> Default for Seq<T> {
    fn default() -> Self {
        Seq(Vec::new())
    }
}

impl<'de, T: serde::Deserialize<'de>> Shape<'de> for Seq<T> {
    fn seq<A: SeqAccess<'de>>(mut seq: A) -> Result<Self, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(16));
        while let Some(item) = seq.next_element::<T>()? {
            items.push(item);
        }
        Ok(Seq(items))
    }
}

impl<'de, T: serde::Deserialize<'de>> serde::Deserialize<'de> for Seq<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        read(d)
    }
}

/// One member of an object being read: a second value for it fails the reading (the caller
/// falls back to a tree, which keeps the last).
pub(crate) fn slot<'de, A, T>(map: &mut A, slot: &mut Option<T>) -> Result<(), A::Error>
where
    A: MapAccess<'de>,
    T: serde::Deserialize<'de>,
{
    if slot.is_some() {
        return Err(de::Error::custom("repeated member"));
    }
    *slot = Some(map.next_value()?);
    Ok(())
}

/// An object's member name (escapes decoded, as a tree has it).
pub(crate) type Key<'a> = Cow<'a, str>;

/// Read an object key (borrowed when it has no escapes).
pub(crate) fn next_key<'de, A: MapAccess<'de>>(map: &mut A) -> Result<Option<Key<'de>>, A::Error> {
    map.next_key::<KeyOf<'de>>().map(|k| k.map(|k| k.0))
}

struct KeyOf<'a>(Cow<'a, str>);

impl<'de> serde::Deserialize<'de> for KeyOf<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = KeyOf<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a member name")
            }
            fn visit_borrowed_str<E>(self, s: &'de str) -> Result<KeyOf<'de>, E> {
                Ok(KeyOf(Cow::Borrowed(s)))
            }
            fn visit_str<E>(self, s: &str) -> Result<KeyOf<'de>, E> {
                Ok(KeyOf(Cow::Owned(s.to_owned())))
            }
            fn visit_string<E>(self, s: String) -> Result<KeyOf<'de>, E> {
                Ok(KeyOf(Cow::Owned(s)))
            }
        }
        d.deserialize_str(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn both<'a, T>(text: &'a str, tree: &'a Value) -> (Result<T, serde_json::Error>, T)
    where
        T: serde::Deserialize<'a>,
    {
        let from_text = serde_json::from_str::<T>(text);
        let from_tree = T::deserialize(tree).unwrap_or_else(|e| panic!("{text}: {e}"));
        (from_text, from_tree)
    }

    #[test]
    fn a_string_reads_as_a_tree_would_read_it() {
        for text in [
            r#""a""#,
            r#""\u0041\n""#,
            "1",
            "-1",
            "1.5",
            "true",
            "null",
            "[]",
            r#"{"a":"b"}"#,
        ] {
            let tree: Value = serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}"));
            let (text_read, tree_read) = both::<Str<'_>>(text, &tree);
            assert_eq!(text_read.ok(), Some(tree_read.clone()), "{text}");
            assert_eq!(tree_read.as_deref(), tree.as_str(), "{text}");
        }
    }

    #[test]
    fn an_array_reads_its_items_and_anything_else_reads_empty() {
        let text = r#"["a",1,null,"b",{"x":"y"},["c"]]"#;
        let tree: Value = serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}"));
        let (read, tree_read) = both::<Seq<Str<'_>>>(text, &tree);
        let read = read.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(read, tree_read);
        let strings: Vec<_> = read.0.iter().filter_map(Str::as_deref).collect();
        assert_eq!(strings, ["a", "b"]);
        for other in [r#""a""#, "{}", "3", "null"] {
            let read =
                serde_json::from_str::<Seq<Str<'_>>>(other).unwrap_or_else(|e| panic!("{e}"));
            assert!(read.0.is_empty(), "{other}");
        }
    }

    #[test]
    fn malformed_text_fails_rather_than_reading_part() {
        for text in [r#"["a""#, r#""a"#, "[1,]", ""] {
            assert!(
                serde_json::from_str::<Seq<Str<'_>>>(text).is_err(),
                "{text}"
            );
        }
    }
}
