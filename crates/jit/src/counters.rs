//! One definition for a set of counters: the atomic struct updated while running and
//! the plain snapshot users read (the JIT's and the engine's counters).

/// Defines, from one list of documented fields, a struct of `AtomicU64` counters
/// (`$live`, updated while running) and a plain `u64` snapshot of them (`$snap`),
/// with `$live::snapshot`.
#[macro_export]
macro_rules! counters {
    (
        $(#[$lm:meta])* live $live:ident;
        $(#[$sm:meta])* snapshot $snap:ident;
        { $($(#[$fm:meta])* $field:ident,)* }
    ) => {
        $(#[$lm])*
        #[derive(Default)]
        pub(crate) struct $live {
            $(pub $field: ::std::sync::atomic::AtomicU64,)*
        }

        $(#[$sm])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        pub struct $snap {
            $($(#[$fm])* pub $field: u64,)*
        }

        impl $live {
            /// The current values.
            pub(crate) fn snapshot(&self) -> $snap {
                $snap {
                    $($field: self.$field.load(::std::sync::atomic::Ordering::Relaxed),)*
                }
            }
        }
    };
}
