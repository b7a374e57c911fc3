//! Retry hints: the header parsers as pure functions, with the bounds they keep.

use super::*;

/// The longest wait a retry hint may ask for (`MAX_RETRY_HINT`, a day).
const DAY: Duration = Duration::from_secs(24 * 3600);
/// 10000-01-01T00:00:00Z in Unix seconds: no HTTP date is later.
const YEAR_10000: u64 = 253_402_300_800;
/// Executions per header parser when `AXE_FUZZ_EXECS` is not set.
const HEADER_EXECS: usize = 20_000;

/// The civil date of a day counted from 1970-01-01 (Howard Hinnant's
/// `civil_from_days`, the inverse of what `http_date` computes).
fn civil_from_days(days: i64) -> (i64, u64, u64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month as u64, day as u64)
}

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// `secs` after the epoch as an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`).
fn imf_fixdate(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let (y, m, d) = civil_from_days(days);
    let weekday = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"][(days % 7) as usize];
    let t = secs % 86_400;
    format!(
        "{weekday}, {d:02} {} {y} {:02}:{:02}:{:02} GMT",
        MONTHS[(m - 1) as usize],
        t / 3600,
        t / 60 % 60,
        t % 60
    )
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Realistic `Retry-After` and `retry-after-ms` values, and the edges:
/// seconds, fractions, numbers too large for a `Duration` or an `f64`,
/// negative, NaN and infinite values, and IMF-fixdates in and out of range
/// (year 9999 and 300000000000, Feb 29/30/31, a leap second, the other two
/// HTTP date formats, dates around now).
pub(crate) fn hint_seeds() -> Vec<String> {
    let mut seeds: Vec<String> = [
        "0",
        "1",
        "0.5",
        "1.5",
        "0.001",
        "1e-9",
        "120",
        "3600.25",
        "86400",
        "86401",
        "1e30",
        "1e308",
        "1e309",
        "99999999999999999999",
        "18446744073709551615",
        "18446744073709551616",
        "-1",
        "-0",
        "-0.5",
        "-1e30",
        "NaN",
        "nan",
        "inf",
        "-inf",
        "infinity",
        "",
        " 7 ",
        "1,5",
        "0x10",
        "1_000",
        "+3",
        "Sun, 06 Nov 1994 08:49:37 GMT",
        "Thu, 01 Jan 1970 00:00:00 GMT",
        "Wed, 31 Dec 1969 23:59:59 GMT",
        "Fri, 31 Dec 9999 23:59:59 GMT",
        "Fri, 31 Dec 9999 23:59:60 GMT",
        "Sat, 01 Jan 10000 00:00:00 GMT",
        "Mon, 01 Jan 300000000000 00:00:00 GMT",
        "Mon, 01 Jan 18446744073709551615 00:00:00 GMT",
        "Thu, 29 Feb 2024 12:00:00 GMT",
        "Wed, 29 Feb 2023 12:00:00 GMT",
        "Fri, 30 Feb 2024 12:00:00 GMT",
        "Sat, 31 Feb 2024 12:00:00 GMT",
        "Tue, 29 Feb 2000 00:00:00 GMT",
        "Mon, 29 Feb 2100 00:00:00 GMT",
        "Sun, 00 Nov 1994 08:49:37 GMT",
        "Sun, 06 Nov 1994 24:00:00 GMT",
        "Sun, 06 Nov 1994 08:60:00 GMT",
        "Sun, 06 Nov 1994 08:49:61 GMT",
        "Sun, 06 Nov 1994 08:49 GMT",
        "Sun, 06 Nov 1994 08:49:37 UTC",
        "Sunday, 06-Nov-94 08:49:37 GMT",
        "Sun Nov  6 08:49:37 1994",
        "Sun, 6 Nov 1994 8:49:37 GMT",
        "true",
        "false",
    ]
    .map(String::from)
    .to_vec();
    let now = unix_now();
    for ahead in [0, 1, 2, 60, 3600, 86_399, 86_400, 86_401, 10 * 86_400] {
        seeds.push(imf_fixdate(now + ahead));
    }
    seeds.push(imf_fixdate(now - 60));
    seeds
}

#[test]
fn fuzz_retry_hint_never_panics_and_never_asks_for_more_than_a_day() {
    let nows = [
        SystemTime::now(),
        UNIX_EPOCH,
        UNIX_EPOCH + Duration::from_secs(YEAR_10000 - 1),
        UNIX_EPOCH.checked_sub(DAY).unwrap_or(UNIX_EPOCH),
    ];
    assert_eq!(retry_hint(None, None, nows[0]), None);
    fuzz_with(
        "retry_hint",
        &hint_seeds(),
        HEADER_TOKENS,
        HEADER_EXECS,
        |s| {
            for now in nows {
                for (ms, after) in [
                    (Some(s), None),
                    (None, Some(s)),
                    (Some(s), Some(s)),
                    (Some("soon"), Some(s)),
                ] {
                    if let Some(wait) = retry_hint(ms, after, now) {
                        assert!(wait <= DAY, "a hint of {wait:?}");
                    }
                }
            }
        },
    );
}

#[test]
fn fuzz_http_date_is_none_or_the_date_it_says_between_1970_and_10000() {
    fuzz_with(
        "http_date",
        &hint_seeds(),
        HEADER_TOKENS,
        HEADER_EXECS,
        |s| {
            let Some(at) = http_date(s) else {
                return;
            };
            let secs = match at.duration_since(UNIX_EPOCH) {
                Ok(d) => d.as_secs(),
                Err(_) => panic!("{s:?} is before 1970"),
            };
            assert!(secs <= YEAR_10000, "{s:?} is after 9999 ({secs} s)");
            // The time is the one written, when the fields read as numbers (a
            // leap second, :60, is the next second).
            let parts: Vec<&str> = s.split_whitespace().collect();
            let fields = (|| {
                let day: u64 = parts.get(1)?.parse().ok()?;
                let month = MONTHS.iter().position(|m| Some(m) == parts.get(2))? as u64 + 1;
                let year: i64 = parts.get(3)?.parse().ok()?;
                let hms: Vec<u64> = parts
                    .get(4)?
                    .split(':')
                    .map(|p| p.parse().ok())
                    .collect::<Option<_>>()?;
                Some((year, month, day, hms))
            })();
            if let Some((year, month, day, hms)) = fields
                && let [h, m, sec] = hms[..]
            {
                let leap = u64::from(sec == 60);
                let shown = secs - leap;
                let days = (shown / 86_400) as i64;
                assert_eq!(civil_from_days(days), (year, month, day), "{s:?}");
                assert_eq!(shown % 86_400, h * 3600 + m * 60 + sec - leap, "{s:?}");
            }
        },
    );
}

#[test]
fn fuzz_should_retry_hint_is_true_or_false_only_when_it_says_so() {
    assert_eq!(should_retry_hint(None), None);
    let seeds: Vec<String> = [
        "true", "false", " true ", "\tfalse", "True", "FALSE", "1", "0", "yes", "",
    ]
    .map(String::from)
    .to_vec();
    fuzz_with(
        "should_retry_hint",
        &seeds,
        HEADER_TOKENS,
        HEADER_EXECS,
        |s| match should_retry_hint(Some(s)) {
            Some(b) => assert_eq!(s.trim(), b.to_string(), "{s:?}"),
            None => assert!(!["true", "false"].contains(&s.trim()), "{s:?}"),
        },
    );
}
