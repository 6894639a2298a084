//! The server-certificate verifier every client shares: rustls's own (webpki) verifier, plus
//! the one case Node's OpenSSL accepts and webpki refuses.
//!
//! A self-signed certificate made the usual way (`openssl req -x509 …`) is marked CA:TRUE.
//! Trusted through `NODE_EXTRA_CA_CERTS` and presented by a server as its own certificate,
//! OpenSSL finds it in the trust store and accepts it, so Node's `fetch` works; webpki refuses
//! any CA certificate in the end-entity position (`CaUsedAsEndEntity`). On exactly that error,
//! and only for a certificate byte-identical to one of the trusted PEM certificates, the
//! certificate is checked here as webpki would check an end entity otherwise: within its
//! validity period, valid for the server name, and (when it lists extended key usages)
//! meant for TLS servers. The handshake signature is verified with its key by the inner
//! verifier, as for any certificate. Every other refusal stands.

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, DistinguishedName, Error, SignatureScheme};

/// rustls's verifier over the roots, and the trusted certificates a server may present as its
/// own (those of `NODE_EXTRA_CA_CERTS`).
#[derive(Debug)]
pub(crate) struct NodeTrust {
    webpki: Arc<WebPkiServerVerifier>,
    trusted: Vec<CertificateDer<'static>>,
}

impl NodeTrust {
    pub(crate) fn new(webpki: Arc<WebPkiServerVerifier>, trusted: Vec<CertificateDer<'static>>) -> Self {
        NodeTrust { webpki, trusted }
    }
}

impl ServerCertVerifier for NodeTrust {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        match self.webpki.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now) {
            Err(e)
                if is_ca_used_as_end_entity(&e) && self.trusted.iter().any(|t| t.as_ref() == end_entity.as_ref()) =>
            {
                trusted_as_itself(end_entity, server_name, now)?;
                Ok(ServerCertVerified::assertion())
            }
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.webpki.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.webpki.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.webpki.supported_verify_schemes()
    }

    fn requires_raw_public_keys(&self) -> bool {
        self.webpki.requires_raw_public_keys()
    }

    fn root_hint_subjects(&self) -> Option<&[DistinguishedName]> {
        self.webpki.root_hint_subjects()
    }
}

/// rustls reports webpki's `CaUsedAsEndEntity` as an "other" certificate error holding it.
fn is_ca_used_as_end_entity(e: &Error) -> bool {
    match e {
        Error::InvalidCertificate(CertificateError::Other(other)) => {
            other.0.downcast_ref::<webpki::Error>() == Some(&webpki::Error::CaUsedAsEndEntity)
        }
        _ => false,
    }
}

/// A trusted certificate presented as the server's own: what webpki checks of an end entity
/// besides its chain, with the errors rustls gives for them.
fn trusted_as_itself(cert: &CertificateDer<'_>, server_name: &ServerName<'_>, now: UnixTime) -> Result<(), Error> {
    let fields = TbsFields::of(cert.as_ref()).ok_or(CertificateError::BadEncoding)?;
    let unix = |secs: i64| UnixTime::since_unix_epoch(std::time::Duration::from_secs(secs.max(0) as u64));
    let (not_before, not_after) = fields.validity;
    let time = i64::try_from(now.as_secs()).unwrap_or(i64::MAX);
    if not_before > not_after {
        return Err(CertificateError::Expired.into());
    }
    if time < not_before {
        return Err(CertificateError::NotValidYetContext { time: now, not_before: unix(not_before) }.into());
    }
    if time > not_after {
        return Err(CertificateError::ExpiredContext { time: now, not_after: unix(not_after) }.into());
    }
    if let Some(purposes) = fields.extended_key_usage {
        if !purposes.contains(&SERVER_AUTH) {
            return Err(CertificateError::InvalidPurpose.into());
        }
    }
    let parsed = rustls::server::ParsedCertificate::try_from(cert)?;
    rustls::client::verify_server_name(&parsed, server_name)
}

/// id-kp-serverAuth (1.3.6.1.5.5.7.3.1), the value bytes of its OID.
const SERVER_AUTH: &[u8] = &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x01];
/// id-ce-extKeyUsage (2.5.29.37).
const EXT_KEY_USAGE: &[u8] = &[0x55, 0x1d, 0x25];

/// The fields of a certificate's `TBSCertificate` (RFC 5280 §4.1) checked above.
#[derive(Debug, PartialEq)]
struct TbsFields<'a> {
    /// notBefore and notAfter, in seconds since the Unix epoch.
    validity: (i64, i64),
    /// The key purpose OIDs of the extKeyUsage extension, if the certificate has one.
    extended_key_usage: Option<Vec<&'a [u8]>>,
}

impl<'a> TbsFields<'a> {
    fn of(der: &'a [u8]) -> Option<Self> {
        let (cert, _) = expect(der, SEQUENCE)?;
        let (tbs, _) = expect(cert, SEQUENCE)?;
        let mut rest = tbs;
        // version [0] EXPLICIT, optional.
        if let Some((0xa0, _, after)) = tlv(rest) {
            rest = after;
        }
        // serialNumber, signature, issuer.
        for tag in [INTEGER, SEQUENCE, SEQUENCE] {
            rest = expect(rest, tag)?.1;
        }
        let (validity, after) = expect(rest, SEQUENCE)?;
        rest = after;
        let (not_before, after) = time(validity)?;
        let (not_after, after) = time(after)?;
        if !after.is_empty() {
            return None;
        }
        // subject, subjectPublicKeyInfo.
        for tag in [SEQUENCE, SEQUENCE] {
            rest = expect(rest, tag)?.1;
        }
        // issuerUniqueID [1], subjectUniqueID [2], extensions [3]: each optional, in order.
        let mut extended_key_usage = None;
        while let Some((tag, value, after)) = tlv(rest) {
            rest = after;
            if tag != 0xa3 {
                continue;
            }
            let (mut list, _) = expect(value, SEQUENCE)?;
            while !list.is_empty() {
                let (extension, after) = expect(list, SEQUENCE)?;
                list = after;
                let (oid, mut fields) = expect(extension, OID)?;
                if oid != EXT_KEY_USAGE {
                    continue;
                }
                // critical BOOLEAN DEFAULT FALSE.
                if let Some((BOOLEAN, _, after)) = tlv(fields) {
                    fields = after;
                }
                let (octets, _) = expect(fields, OCTET_STRING)?;
                let (mut purposes, _) = expect(octets, SEQUENCE)?;
                let mut found = Vec::new();
                while !purposes.is_empty() {
                    let (oid, after) = expect(purposes, OID)?;
                    found.push(oid);
                    purposes = after;
                }
                extended_key_usage = Some(found);
            }
        }
        Some(TbsFields { validity: (not_before, not_after), extended_key_usage })
    }
}

const BOOLEAN: u8 = 0x01;
const INTEGER: u8 = 0x02;
const OCTET_STRING: u8 = 0x04;
const OID: u8 = 0x06;
const UTC_TIME: u8 = 0x17;
const GENERALIZED_TIME: u8 = 0x18;
const SEQUENCE: u8 = 0x30;

/// One DER element: its tag, its value and what follows it.
fn tlv(input: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = input.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        let len = rest[..n].iter().fold(0usize, |acc, &b| (acc << 8) | usize::from(b));
        (len, &rest[n..])
    };
    (rest.len() >= len).then(|| (tag, &rest[..len], &rest[len..]))
}

/// The next element, which must have tag `tag`: its value and what follows it.
fn expect(input: &[u8], tag: u8) -> Option<(&[u8], &[u8])> {
    let (t, value, rest) = tlv(input)?;
    (t == tag).then_some((value, rest))
}

/// A `Time` (RFC 5280 §4.1.2.5: UTCTime `YYMMDDHHMMSSZ` for 1950–2049, GeneralizedTime
/// `YYYYMMDDHHMMSSZ` otherwise) in seconds since the Unix epoch, and what follows it.
fn time(input: &[u8]) -> Option<(i64, &[u8])> {
    let (tag, value, rest) = tlv(input)?;
    let (year, digits) = match (tag, value.len()) {
        (UTC_TIME, 13) => {
            let yy = number(&value[..2])?;
            (if yy >= 50 { 1900 + yy } else { 2000 + yy }, &value[2..])
        }
        (GENERALIZED_TIME, 15) => (number(&value[..4])?, &value[4..]),
        _ => return None,
    };
    if digits[10] != b'Z' {
        return None;
    }
    let [month, day, hour, minute, second] = [0, 2, 4, 6, 8].map(|at| number(&digits[at..at + 2]));
    let (month, day, hour, minute, second) = (month?, day?, hour?, minute?, second?);
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let month_days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return None,
    };
    if day < 1 || day > month_days || hour > 23 || minute > 59 || second > 59 {
        return None;
    }
    let days = days_from_civil(year, month, day);
    Some((days * 86_400 + hour * 3_600 + minute * 60 + second, rest))
}

/// ASCII decimal digits as a number.
fn number(digits: &[u8]) -> Option<i64> {
    digits.iter().try_fold(0i64, |acc, &d| d.is_ascii_digit().then(|| acc * 10 + i64::from(d - b'0')))
}

/// Days from 1970-01-01 to a date of the proleptic Gregorian calendar.
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let year_of_era = y - era * 400;
    let day_of_year = (153 * ((month + 9) % 12) + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    fn der(tag: u8, value: &[u8]) -> Vec<u8> {
        let mut out = vec![tag];
        match value.len() {
            n if n < 0x80 => out.push(n as u8),
            n if n < 0x100 => out.extend([0x81, n as u8]),
            n => out.extend([0x82, (n >> 8) as u8, n as u8]),
        }
        out.extend_from_slice(value);
        out
    }

    fn seq(parts: &[Vec<u8>]) -> Vec<u8> {
        der(SEQUENCE, &parts.concat())
    }

    /// A certificate shaped enough for `TbsFields` (nothing here checks signatures or names).
    fn cert(not_before: Vec<u8>, not_after: Vec<u8>, extensions: Option<Vec<Vec<u8>>>) -> Vec<u8> {
        let mut tbs = vec![
            der(0xa0, &der(INTEGER, &[2])),
            der(INTEGER, &[1]),
            seq(&[der(OID, &[1, 2])]),
            seq(&[]),
            seq(&[not_before, not_after]),
            seq(&[]),
            seq(&[der(0x03, &[0])]),
        ];
        if let Some(list) = extensions {
            tbs.push(der(0xa3, &seq(&list)));
        }
        seq(&[seq(&tbs), seq(&[der(OID, &[1, 2])]), der(0x03, &[0])])
    }

    fn utc(text: &str) -> Vec<u8> {
        der(UTC_TIME, text.as_bytes())
    }

    fn generalized(text: &str) -> Vec<u8> {
        der(GENERALIZED_TIME, text.as_bytes())
    }

    fn eku(critical: bool, purposes: &[&[u8]]) -> Vec<u8> {
        let list = seq(&purposes.iter().map(|p| der(OID, p)).collect::<Vec<_>>());
        let mut parts = vec![der(OID, EXT_KEY_USAGE)];
        if critical {
            parts.push(der(BOOLEAN, &[0xff]));
        }
        parts.push(der(OCTET_STRING, &list));
        seq(&parts)
    }

    #[test]
    fn times_read_as_rfc_5280_writes_them() {
        let c = cert(utc("700101000000Z"), generalized("20500101000000Z"), None);
        assert_eq!(TbsFields::of(&c).unwrap().validity, (0, 2_524_608_000));
        // UTCTime years 50-99 are 19xx, 00-49 are 20xx; leap days count.
        let c = cert(utc("500101000000Z"), utc("490101000000Z"), None);
        assert_eq!(TbsFields::of(&c).unwrap().validity, (-631_152_000, 2_493_072_000));
        let c = cert(utc("240229235959Z"), generalized("21000301000000Z"), None);
        assert_eq!(TbsFields::of(&c).unwrap().validity, (1_709_251_199, 4_107_542_400));
        // Not a date, a zone other than Z, a wrong length: not read.
        for bad in [utc("230229000000Z"), utc("241301000000Z"), utc("240101000000+0100"), utc("2401010000Z")] {
            assert_eq!(TbsFields::of(&cert(bad.clone(), utc("300101000000Z"), None)), None);
        }
    }

    #[test]
    fn extended_key_usage_is_read_whether_or_not_critical() {
        const CLIENT_AUTH: &[u8] = &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x02];
        let other = seq(&[der(OID, &[0x55, 0x1d, 0x13]), der(OCTET_STRING, &seq(&[]))]);
        let times = || (utc("240101000000Z"), utc("300101000000Z"));
        let (a, b) = times();
        assert_eq!(TbsFields::of(&cert(a, b, None)).unwrap().extended_key_usage, None);
        let (a, b) = times();
        let c = cert(a, b, Some(vec![other.clone(), eku(false, &[CLIENT_AUTH, SERVER_AUTH])]));
        assert_eq!(TbsFields::of(&c).unwrap().extended_key_usage, Some(vec![CLIENT_AUTH, SERVER_AUTH]));
        let (a, b) = times();
        let c = cert(a, b, Some(vec![eku(true, &[CLIENT_AUTH]), other]));
        assert_eq!(TbsFields::of(&c).unwrap().extended_key_usage, Some(vec![CLIENT_AUTH]));
    }

    #[test]
    fn a_trusted_ca_certificate_presented_as_itself_is_held_to_its_dates_and_names() {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::new(vec!["localhost".to_string()]).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params.not_before = rcgen::date_time_ymd(2030, 1, 1);
        params.not_after = rcgen::date_time_ymd(2031, 1, 1);
        let der = params.self_signed(&key).unwrap().der().clone();
        let start = days_from_civil(2030, 1, 1) as u64 * 86_400;
        let end = days_from_civil(2031, 1, 1) as u64 * 86_400;
        let at = |secs: u64| UnixTime::since_unix_epoch(std::time::Duration::from_secs(secs));
        let localhost = ServerName::try_from("localhost").unwrap();
        let not_yet = |r: Result<(), Error>| {
            matches!(r, Err(Error::InvalidCertificate(CertificateError::NotValidYetContext { .. })))
        };
        let expired =
            |r: Result<(), Error>| matches!(r, Err(Error::InvalidCertificate(CertificateError::ExpiredContext { .. })));

        // Valid from its first second through its last, and not outside.
        assert_eq!(trusted_as_itself(&der, &localhost, at(start)), Ok(()));
        assert_eq!(trusted_as_itself(&der, &localhost, at(end)), Ok(()));
        assert!(not_yet(trusted_as_itself(&der, &localhost, at(start - 1))));
        assert!(expired(trusted_as_itself(&der, &localhost, at(end + 1))));
        // Only for its own names.
        let other = ServerName::try_from("example.com").unwrap();
        assert!(matches!(
            trusted_as_itself(&der, &other, at(start)),
            Err(Error::InvalidCertificate(CertificateError::NotValidForNameContext { .. }))
        ));
        let ip = ServerName::try_from("127.0.0.1").unwrap();
        assert!(trusted_as_itself(&der, &ip, at(start)).is_err());

        // Through the verifier, and only for the certificate that is trusted itself.
        let mut roots = rustls::RootCertStore::empty();
        roots.add(der.clone()).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider).build().unwrap();
        let verify = |v: &NodeTrust, secs| v.verify_server_cert(&der, &[], &localhost, &[], at(secs)).map(|_| ());
        let trusting = NodeTrust::new(webpki.clone(), vec![der.clone()]);
        assert_eq!(verify(&trusting, start + 1), Ok(()));
        assert!(expired(verify(&trusting, end + 1)));
        let not_trusting = NodeTrust::new(webpki, vec![]);
        assert!(is_ca_used_as_end_entity(&verify(&not_trusting, start + 1).unwrap_err()));
    }

    #[test]
    fn truncated_or_trailing_input_is_not_read() {
        let c = cert(utc("240101000000Z"), utc("300101000000Z"), None);
        assert!(TbsFields::of(&c).is_some());
        for cut in 1..c.len() {
            assert_eq!(TbsFields::of(&c[..cut]), None, "cut at {cut}");
        }
        assert_eq!(tlv(&[0x30, 0x85, 1, 0, 0, 0, 0]), None);
        assert_eq!(tlv(&[0x30, 0x80]), None);
    }
}
