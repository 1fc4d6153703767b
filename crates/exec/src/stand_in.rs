//! Expressions that stand in for an `original` DataFusion expression — the same value,
//! evaluated faster where they can (`narrow_decimal::NarrowDecimalExpr`,
//! `like_segments::SegmentsExpr`). They are equal and hashed as the original, show as
//! `name(original)`, and have the original as their only child, so a rewrite of the
//! plan that changes the original gets the new original back, as DataFusion's own.

use std::sync::Arc;

use datafusion::common::Result;
use datafusion::physical_expr::PhysicalExpr;

/// `Display` as `$name(original)`, and `PartialEq`, `Eq` and `Hash` as the original's,
/// for a stand-in `$ty` with a field `original`.
macro_rules! stands_in_for_original {
    ($ty:ty, $name:literal) => {
        impl std::fmt::Display for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, concat!($name, "({})"), self.original)
            }
        }

        // What stands in is a function of the original.
        impl PartialEq for $ty {
            fn eq(&self, other: &Self) -> bool {
                self.original.eq(&other.original)
            }
        }

        impl Eq for $ty {}

        impl std::hash::Hash for $ty {
            fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
                self.original.hash(state);
            }
        }
    };
}
pub(crate) use stands_in_for_original;

/// Inside `impl PhysicalExpr for` a stand-in with a field `original`: its
/// `children` (the original alone), `with_new_children` ([`with_original_child`]) and
/// `fmt_sql` (the original's).
macro_rules! original_as_only_child {
    () => {
        fn children(&self) -> Vec<&Arc<dyn PhysicalExpr>> {
            vec![&self.original]
        }

        fn with_new_children(
            self: Arc<Self>,
            children: Vec<Arc<dyn PhysicalExpr>>,
        ) -> Result<Arc<dyn PhysicalExpr>> {
            let original = Arc::clone(&self.original);
            $crate::stand_in::with_original_child(self, &original, children)
        }

        fn fmt_sql(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            self.original.fmt_sql(f)
        }
    };
}
pub(crate) use original_as_only_child;

/// `PhysicalExpr::with_new_children` of a stand-in `this` whose only child is
/// `original`: itself while the child is unchanged, else the new child alone.
pub(crate) fn with_original_child<T: PhysicalExpr + 'static>(
    this: Arc<T>,
    original: &Arc<dyn PhysicalExpr>,
    mut children: Vec<Arc<dyn PhysicalExpr>>,
) -> Result<Arc<dyn PhysicalExpr>> {
    match children.pop() {
        Some(child) if children.is_empty() && Arc::ptr_eq(&child, original) => Ok(this),
        Some(child) if children.is_empty() => Ok(child),
        _ => datafusion::common::internal_err!("{this} takes exactly one child"),
    }
}
