//! Dates: a time as the profiles and reports write it (`YYYY-MM-DD HH:MM UTC`).

use std::time::{SystemTime, UNIX_EPOCH};

/// Year, month, day of a count of days since 1970-01-01 (proleptic Gregorian).
fn civil_date(days: i64) -> (i64, u32, u32) {
    // Shift to a calendar that starts on 0000-03-01, so the leap day ends each
    // 4/100/400-year cycle; 719468 days separate that origin from 1970-01-01.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_from_march = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * month_from_march + 2) / 5 + 1) as u32;
    let month = if month_from_march < 10 {
        month_from_march + 3
    } else {
        month_from_march - 9
    } as u32;
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// `time` as `YYYY-MM-DD HH:MM UTC`.
pub fn utc_date(time: SystemTime) -> String {
    let secs = match time.duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_secs() as i64,
        Err(e) => -(e.duration().as_secs() as i64),
    };
    let (y, m, d) = civil_date(secs.div_euclid(86_400));
    let s = secs.rem_euclid(86_400);
    format!("{y:04}-{m:02}-{d:02} {:02}:{:02} UTC", s / 3600, s / 60 % 60)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn civil_dates() {
        assert_eq!(civil_date(0), (1970, 1, 1));
        assert_eq!(civil_date(11_016), (2000, 2, 29));
        assert_eq!(civil_date(19_723), (2024, 1, 1));
        assert_eq!(civil_date(-1), (1969, 12, 31));
        assert_eq!(civil_date(20_513), (2026, 3, 1));
    }

    #[test]
    fn utc_date_has_minutes() {
        let t = UNIX_EPOCH + Duration::from_secs(19_723 * 86_400 + 13 * 3600 + 7 * 60 + 59);
        assert_eq!(utc_date(t), "2024-01-01 13:07 UTC");
    }
}
