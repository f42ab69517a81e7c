//! The path flavour fs checks use. It sits beside the path code (`fs`,
//! `glob`) and depends on nothing, so `fs` and `policy` both import it
//! without importing each other.

/// Which path flavour fs checks use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Platform {
    /// `/`-separated, case-sensitive; `\` is an ordinary character. Default on non-Windows hosts.
    #[cfg_attr(not(windows), default)]
    Posix,
    /// `\` and `/` separate, drive-absolute paths only, case-insensitive. Default on Windows hosts.
    #[cfg_attr(windows, default)]
    Win32,
}

impl Platform {
    /// Every flavour, in the wire's order (the JS `PLATFORMS` list; the raw
    /// compile entry takes an index into it).
    #[cfg_attr(not(feature = "napi"), allow(dead_code))]
    pub(crate) const ALL: [Platform; 2] = [Platform::Posix, Platform::Win32];

    /// The flavour named `posix` or `win32` (the JS option's spelling); `None` for any other name.
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "posix" => Some(Platform::Posix),
            "win32" => Some(Platform::Win32),
            _ => None,
        }
    }

    /// The name [`Platform::parse`] reads back: `posix` or `win32`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Platform::Posix => "posix",
            Platform::Win32 => "win32",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Platform;

    #[test]
    fn names_round_trip_and_nothing_else_parses() {
        for p in Platform::ALL {
            assert_eq!(Platform::parse(p.as_str()), Some(p));
            // Every variant is listed (a new one fails to compile here).
            match p {
                Platform::Posix | Platform::Win32 => {}
            }
        }
        assert_eq!(Platform::ALL.map(Platform::as_str), ["posix", "win32"]);
        for bad in ["", "Posix", "WIN32", "linux", "win32 "] {
            assert_eq!(Platform::parse(bad), None, "{bad:?}");
        }
        assert_eq!(Platform::default(), if cfg!(windows) { Platform::Win32 } else { Platform::Posix });
    }
}
