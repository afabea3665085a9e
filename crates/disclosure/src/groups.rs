//! Availability of tool groups: host-registered checks, cached for a TTL and shared.
//!
//! One [`Availability`] is meant to be shared (`Arc`) by every agent or app of a host: a
//! conditional group's check then runs at most once per TTL however many tool sets ask, and
//! concurrent askers of an expired entry wait for the one running check instead of repeating it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use toolsearch_catalog::{Group, Visibility};

/// How long a check result is trusted when the group names no `ttl_secs`.
pub const DEFAULT_TTL: Duration = Duration::from_secs(10);

/// A source of monotonic time, so TTLs can be tested and replayed without sleeping.
pub trait Clock: Send + Sync {
    /// Time elapsed since an arbitrary fixed origin.
    fn now(&self) -> Duration;
}

/// The real monotonic clock.
#[derive(Debug)]
pub struct SystemClock(Instant);

impl Default for SystemClock {
    fn default() -> Self {
        SystemClock(Instant::now())
    }
}

impl Clock for SystemClock {
    fn now(&self) -> Duration {
        self.0.elapsed()
    }
}

/// A clock that moves only when told to (tests, `toolsearch replay`).
#[derive(Debug, Default)]
pub struct ManualClock(AtomicU64);

impl ManualClock {
    /// Moves the clock forward.
    pub fn advance(&self, by: Duration) {
        self.0.fetch_add(by.as_millis() as u64, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Duration {
        Duration::from_millis(self.0.load(Ordering::SeqCst))
    }
}

/// A host's availability check: `true` when the group's tools can be used now.
pub type Probe = Arc<dyn Fn() -> bool + Send + Sync>;

/// What the host says about an unavailable group: what is down and what to fix.
pub type Reason = Arc<dyn Fn() -> String + Send + Sync>;

struct Check {
    probe: Probe,
    /// Why the group is unavailable, in the host's words, when it says.
    reason: Option<Reason>,
    /// The last result and when it was taken; guarded separately so a slow check blocks only
    /// the askers of this check.
    cached: Mutex<Option<(bool, Duration)>>,
    runs: AtomicU64,
}

/// Registered availability checks with their cached results.
pub struct Availability {
    checks: Mutex<HashMap<String, Arc<Check>>>,
    clock: Arc<dyn Clock>,
}

impl Default for Availability {
    fn default() -> Self {
        Availability::new(Arc::new(SystemClock::default()))
    }
}

impl std::fmt::Debug for Availability {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<String> = self.lock().keys().cloned().collect();
        f.debug_struct("Availability").field("checks", &names).finish()
    }
}

impl Availability {
    /// No checks yet, timed by `clock`.
    pub fn new(clock: Arc<dyn Clock>) -> Availability {
        Availability { checks: Mutex::new(HashMap::new()), clock }
    }

    /// Registers (or replaces) the check called `name` in the manifest's `groups[].check`.
    pub fn register(&self, name: impl Into<String>, probe: impl Fn() -> bool + Send + Sync + 'static) {
        let check = Check { probe: Arc::new(probe), reason: None, cached: Mutex::new(None), runs: AtomicU64::new(0) };
        self.lock().insert(name.into(), Arc::new(check));
    }

    /// Registers a check with a live explanation: while the group is unavailable, `reason`
    /// says what is down and what to fix (it replaces the group's static suggestion).
    pub fn register_with_reason(
        &self,
        name: impl Into<String>,
        probe: impl Fn() -> bool + Send + Sync + 'static,
        reason: impl Fn() -> String + Send + Sync + 'static,
    ) {
        let check = Check {
            probe: Arc::new(probe),
            reason: Some(Arc::new(reason)),
            cached: Mutex::new(None),
            runs: AtomicU64::new(0),
        };
        self.lock().insert(name.into(), Arc::new(check));
    }

    /// Forgets the check called `name` (a host's configuration no longer names it): a group
    /// that still asks for it is unavailable from now on. Whether there was one.
    pub fn unregister(&self, name: &str) -> bool {
        self.lock().remove(name).is_some()
    }

    /// The host's explanation of why the check `name` fails, if it gave one.
    pub fn reason(&self, name: &str) -> Option<String> {
        let check = self.lock().get(name).cloned()?;
        check.reason.as_ref().map(|r| r())
    }

    /// Forgets every cached result (the next ask runs each check again).
    pub fn invalidate(&self) {
        for check in self.lock().values() {
            *check.cached.lock().unwrap_or_else(|p| p.into_inner()) = None;
        }
    }

    /// Whether `group`'s tools are usable now: `always` groups are; a conditional group is when
    /// its check passes (cached for the group's TTL). A conditional group whose check was never
    /// registered is unavailable: showing tools nobody can vouch for would fail later, worse.
    pub fn is_available(&self, group: &Group) -> bool {
        if group.visibility == Visibility::Always {
            return true;
        }
        let Some(name) = group.check.as_deref() else { return false };
        let Some(check) = self.lock().get(name).cloned() else { return false };
        let ttl = group.ttl_secs.map_or(DEFAULT_TTL, Duration::from_secs);
        let mut cached = check.cached.lock().unwrap_or_else(|p| p.into_inner());
        let now = self.clock.now();
        if let Some((value, at)) = *cached {
            if now.saturating_sub(at) < ttl {
                return value;
            }
        }
        check.runs.fetch_add(1, Ordering::SeqCst);
        // A panicking check counts as "unavailable" rather than taking the host down.
        let value = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| (check.probe)())).unwrap_or(false);
        *cached = Some((value, now));
        value
    }

    /// How many times the check `name` has actually run (not served from the cache).
    pub fn runs(&self, name: &str) -> u64 {
        self.lock().get(name).map_or(0, |c| c.runs.load(Ordering::SeqCst))
    }

    /// Whether a check called `name` is registered.
    pub fn has_check(&self, name: &str) -> bool {
        self.lock().contains_key(name)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Check>>> {
        self.checks.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conditional(check: &str, ttl: Option<u64>) -> Group {
        Group {
            id: "g".into(),
            visibility: Visibility::Conditional,
            check: Some(check.into()),
            ttl_secs: ttl,
            suggestion: None,
            pending: None,
        }
    }

    #[test]
    fn results_are_cached_for_the_ttl_then_checked_again() {
        let clock = Arc::new(ManualClock::default());
        let availability = Availability::new(clock.clone());
        let up = Arc::new(std::sync::atomic::AtomicBool::new(true));
        let flag = up.clone();
        availability.register("probe", move || flag.load(Ordering::SeqCst));
        let group = conditional("probe", None);
        assert!(availability.is_available(&group));
        up.store(false, Ordering::SeqCst);
        clock.advance(Duration::from_secs(9));
        assert!(availability.is_available(&group), "still cached inside the default 10 s");
        assert_eq!(availability.runs("probe"), 1);
        clock.advance(Duration::from_secs(1));
        assert!(!availability.is_available(&group), "re-checked once the TTL passed");
        assert_eq!(availability.runs("probe"), 2);
        let short = conditional("probe", Some(0));
        up.store(true, Ordering::SeqCst);
        assert!(availability.is_available(&short), "ttl 0 checks every time");
    }

    #[test]
    fn unregistered_or_panicking_checks_mean_unavailable() {
        let availability = Availability::default();
        assert!(!availability.is_available(&conditional("nobody", None)));
        availability.register("boom", || panic!("check failed"));
        assert!(!availability.is_available(&conditional("boom", None)));
        let always = Group { visibility: Visibility::Always, ..conditional("x", None) };
        assert!(availability.is_available(&always));
    }

    #[test]
    fn an_unregistered_check_makes_its_group_unavailable() {
        let availability = Availability::default();
        availability.register("probe", || true);
        let group = conditional("probe", Some(0));
        assert!(availability.is_available(&group));
        assert!(availability.unregister("probe"));
        assert!(!availability.is_available(&group), "a forgotten check vouches for nothing");
        assert!(!availability.unregister("probe"), "nothing left to forget");
    }
}
