//! [`KeyValue`]: a value of a workload dict as its caller gives it (the bindings convert
//! Python values into it), before [`super::from_keys`] reads it into a
//! [`Workload`](super::Workload). It displays as Python writes the value, for the messages
//! that quote it.

use std::fmt;

/// A plain value of a workload dict.
#[derive(Clone, Debug, PartialEq)]
pub enum KeyValue {
    /// No value (Python's None): the key is read as absent.
    Null,
    Bool(bool),
    Int(i128),
    Float(f64),
    Str(String),
    /// A sequence (a Python list).
    List(Vec<KeyValue>),
    /// A sequence written as a tuple (Python's): read as a list, shown as written.
    Tuple(Vec<KeyValue>),
    /// A dict of string keys, in the caller's order.
    Map(Vec<(String, KeyValue)>),
    /// A value of another kind, as its caller writes it (Python's `repr`).
    Other(String),
}

impl KeyValue {
    /// The whole number it is (a bool as 0 or 1, as Python takes it), if in `T`'s range.
    pub fn to_int<T: TryFrom<i128>>(&self) -> Option<T> {
        match *self {
            KeyValue::Int(i) => T::try_from(i).ok(),
            KeyValue::Bool(b) => T::try_from(i128::from(b)).ok(),
            _ => None,
        }
    }

    /// The number it is (a whole number or a bool converted).
    pub fn to_f64(&self) -> Option<f64> {
        match *self {
            KeyValue::Float(f) => Some(f),
            KeyValue::Int(i) => Some(i as f64),
            KeyValue::Bool(b) => Some(f64::from(u8::from(b))),
            _ => None,
        }
    }

    pub fn to_bool(&self) -> Option<bool> {
        match *self {
            KeyValue::Bool(b) => Some(b),
            _ => None,
        }
    }

    pub fn to_str(&self) -> Option<&str> {
        match self {
            KeyValue::Str(s) => Some(s),
            _ => None,
        }
    }

    /// Its items when it is a sequence (a list or a tuple).
    pub fn items(&self) -> Option<&[KeyValue]> {
        match self {
            KeyValue::List(items) | KeyValue::Tuple(items) => Some(items),
            _ => None,
        }
    }

    /// Its items, each converted by `item`; None if it is not a sequence or an item does not
    /// convert.
    pub fn to_list<T>(&self, item: impl Fn(&KeyValue) -> Option<T>) -> Option<Vec<T>> {
        self.items()?.iter().map(item).collect()
    }

    /// Its items when it is a sequence of exactly `N`.
    pub fn to_array<const N: usize>(&self) -> Option<&[KeyValue; N]> {
        self.items()?.try_into().ok()
    }
}

/// `f` as Python's `repr` writes it: the shortest digits that read back as `f`, in fixed
/// notation for exponents -4 to 15 (with `.0` when whole), else `1.5e+20`.
fn write_float(out: &mut fmt::Formatter<'_>, f: f64) -> fmt::Result {
    if f.is_nan() {
        return out.write_str("nan");
    }
    if f.is_infinite() {
        return out.write_str(if f > 0.0 { "inf" } else { "-inf" });
    }
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').expect("{:e} writes an exponent");
    let exp: i32 = exp.parse().expect("{:e} writes a whole exponent");
    let (sign, mantissa) = mantissa.strip_prefix('-').map_or(("", mantissa), |m| ("-", m));
    if !(-4..16).contains(&exp) {
        return write!(out, "{sign}{mantissa}e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.unsigned_abs());
    }
    let digits = mantissa.replace('.', "");
    if exp < 0 {
        return write!(out, "{sign}0.{}{digits}", "0".repeat((-exp - 1) as usize));
    }
    let point = exp as usize + 1;
    if digits.len() <= point {
        write!(out, "{sign}{digits}{}.0", "0".repeat(point - digits.len()))
    } else {
        write!(out, "{sign}{}.{}", &digits[..point], &digits[point..])
    }
}

/// `s` as Python's `repr` writes it: in single quotes unless it holds one and no double
/// quote; backslashes, the quote and control characters escaped.
fn write_str(out: &mut fmt::Formatter<'_>, s: &str) -> fmt::Result {
    let quote = if s.contains('\'') && !s.contains('"') { '"' } else { '\'' };
    write!(out, "{quote}")?;
    for c in s.chars() {
        match c {
            '\\' => out.write_str("\\\\")?,
            '\t' => out.write_str("\\t")?,
            '\n' => out.write_str("\\n")?,
            '\r' => out.write_str("\\r")?,
            c if c == quote => write!(out, "\\{c}")?,
            c if c.is_control() || (c.is_whitespace() && c != ' ') => match c as u32 {
                n @ ..=0xff => write!(out, "\\x{n:02x}")?,
                n @ ..=0xffff => write!(out, "\\u{n:04x}")?,
                n => write!(out, "\\U{n:08x}")?,
            },
            c => write!(out, "{c}")?,
        }
    }
    write!(out, "{quote}")
}

impl fmt::Display for KeyValue {
    /// As Python's `repr` writes the value.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyValue::Null => f.write_str("None"),
            KeyValue::Bool(b) => f.write_str(if *b { "True" } else { "False" }),
            KeyValue::Int(i) => write!(f, "{i}"),
            KeyValue::Float(x) => write_float(f, *x),
            KeyValue::Str(s) => write_str(f, s),
            KeyValue::List(items) | KeyValue::Tuple(items) => {
                let tuple = matches!(self, KeyValue::Tuple(_));
                f.write_str(if tuple { "(" } else { "[" })?;
                for (i, v) in items.iter().enumerate() {
                    write!(f, "{}{v}", if i == 0 { "" } else { ", " })?;
                }
                f.write_str(match (tuple, items.len()) {
                    (false, _) => "]",
                    (true, 1) => ",)",
                    (true, _) => ")",
                })
            }
            KeyValue::Map(entries) => {
                f.write_str("{")?;
                for (i, (k, v)) in entries.iter().enumerate() {
                    f.write_str(if i == 0 { "" } else { ", " })?;
                    write_str(f, k)?;
                    write!(f, ": {v}")?;
                }
                f.write_str("}")
            }
            KeyValue::Other(repr) => f.write_str(repr),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_display_as_python_writes_them() {
        let shown = |v: KeyValue| v.to_string();
        for (f, py) in [
            (1.5, "1.5"), (4096.0, "4096.0"), (-0.0, "-0.0"), (0.1, "0.1"), (1e-4, "0.0001"), (1e-5, "1e-05"), (1.5e-7, "1.5e-07"),
            (1e15, "1000000000000000.0"), (1e16, "1e+16"), (1.2345e20, "1.2345e+20"), (123.456, "123.456"), (-2.5e300, "-2.5e+300"),
            (f64::NAN, "nan"), (f64::NEG_INFINITY, "-inf"),
        ] {
            assert_eq!(shown(KeyValue::Float(f)), py, "{f:e}");
        }
        assert_eq!(shown(KeyValue::Str("x'y".into())), r#""x'y""#);
        assert_eq!(shown(KeyValue::Str("it's \"q\"\t\\\u{1}\u{a0}é".into())), r#"'it\'s "q"\t\\\x01\xa0é'"#);
        let map = KeyValue::Map(vec![("a".into(), KeyValue::List(vec![KeyValue::Int(-1), KeyValue::Bool(true), KeyValue::Null])), ("b".into(), KeyValue::Other("Decimal('1')".into()))]);
        assert_eq!(shown(map), "{'a': [-1, True, None], 'b': Decimal('1')}");
        let pair = |a: i128, b: f64| KeyValue::Tuple(vec![KeyValue::Int(a), KeyValue::Float(b)]);
        assert_eq!(shown(KeyValue::List(vec![pair(80, 20.0), KeyValue::Tuple(vec![KeyValue::Int(1)]), KeyValue::Tuple(vec![])])), "[(80, 20.0), (1,), ()]");
    }

    #[test]
    fn conversions_take_what_python_takes() {
        assert_eq!(KeyValue::Bool(true).to_int::<u64>(), Some(1));
        assert_eq!(KeyValue::Int(-1).to_int::<u64>(), None);
        assert_eq!(KeyValue::Int(1 << 32).to_int::<u32>(), None);
        assert_eq!(KeyValue::Float(4096.0).to_int::<u64>(), None);
        assert_eq!(KeyValue::Int(3).to_f64(), Some(3.0));
        assert_eq!(KeyValue::Int(1).to_bool(), None);
        assert_eq!(KeyValue::Str("1".into()).to_list(KeyValue::to_int::<u32>), None);
        for pair in [KeyValue::List(vec![KeyValue::Int(4096), KeyValue::Int(1)]), KeyValue::Tuple(vec![KeyValue::Int(4096), KeyValue::Int(1)])] {
            assert!(pair.to_array::<2>().is_some() && pair.to_array::<3>().is_none());
        }
    }
}
