//! The server-certificate verifier every client shares: rustls's own (webpki) verifier, plus
//! the cases Node accepts and webpki refuses for a certificate trusted as itself.
//!
//! A self-signed certificate made the usual way (`openssl req -x509 …`) is marked CA:TRUE.
//! Trusted through `NODE_EXTRA_CA_CERTS` and presented by a server as its own certificate,
//! OpenSSL finds it in the trust store and accepts it, so Node's `fetch` works; webpki refuses
//! any CA certificate in the end-entity position (`CaUsedAsEndEntity`). Such a certificate made
//! without `-addext subjectAltName=…` names its host only in its subject's CN, which Node's
//! `tls.checkServerIdentity` falls back to when the certificate lists no DNS name; webpki
//! reads subjectAltName only (`NotValidForName`).
//!
//! On exactly those two errors, and only for a certificate byte-identical to one of the
//! trusted PEM certificates, the certificate is checked here as webpki would check an end
//! entity otherwise: within its validity period, (when it lists extended key usages) meant for
//! TLS servers, and valid for the server name, by its subjectAltName or else as Node reads its
//! CN ([`node_accepts_common_name`]). The handshake signature is verified with its key by the
//! inner verifier, as for any certificate. Every other refusal stands, and a name refused
//! here is refused with webpki's own error.

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
        let trusted_itself = || self.trusted.iter().any(|t| t.as_ref() == end_entity.as_ref());
        match self.webpki.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now) {
            Err(e) if is_ca_used_as_end_entity(&e) && trusted_itself() => {
                trusted_as_itself(end_entity, server_name, now)?;
                Ok(ServerCertVerified::assertion())
            }
            // The name is webpki's last check: all else has passed, and is checked again here.
            // Refused, it stays webpki's refusal.
            Err(e) if is_not_valid_for_name(&e) && trusted_itself() => {
                match trusted_as_itself(end_entity, server_name, now) {
                    Ok(()) => Ok(ServerCertVerified::assertion()),
                    Err(_) => Err(e),
                }
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

/// webpki's refusal of a certificate for the server name, with or without its context.
fn is_not_valid_for_name(e: &Error) -> bool {
    matches!(
        e,
        Error::InvalidCertificate(CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. })
    )
}

/// A trusted certificate presented as the server's own: what webpki checks of an end entity
/// besides its chain, with the errors rustls gives for them; the name as Node checks it.
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
    match rustls::client::verify_server_name(&parsed, server_name) {
        Err(e) if !fields.names.as_ref().is_some_and(|names| node_accepts_common_name(names, server_name)) => Err(e),
        _ => Ok(()),
    }
}

/// Whether Node's `tls.checkServerIdentity` accepts the certificate for `server_name` by its
/// subject's CN. Node reads the CN only for a host name (an IP address must be one of the
/// certificate's subjectAltName IP addresses) and only when the subjectAltName lists no DNS
/// name at all (IP, URI or email entries leave the CN in play); then any of the CNs may match.
fn node_accepts_common_name(names: &CertNames, server_name: &ServerName<'_>) -> bool {
    let ServerName::DnsName(host) = server_name else { return false };
    if names.dns_alt_name {
        return false;
    }
    let host = node_labels(host.as_ref());
    names.common_names.iter().any(|cn| node_name_matches(&host, cn))
}

/// A name as Node compares it: without one trailing dot, lower-cased, split into labels.
fn node_labels(name: &str) -> Vec<String> {
    name.strip_suffix('.').unwrap_or(name).to_lowercase().split('.').map(str::to_owned).collect()
}

/// Node's rule for a host against a name the certificate presents (the `check` of
/// `tls.checkServerIdentity`, wildcards allowed): the same number of labels, none of the
/// pattern's empty or outside `!`..DEL; every label but the first equal; the first equal too,
/// unless the pattern's first label holds one `*` (and is no `xn--` label) and the pattern has
/// three labels or more: then the host's first label must start with what precedes the `*` and
/// end with what follows it (so `*.example.com` and `api*.example.com` match one label, never
/// `example.com` itself nor a deeper name; `*.localhost` matches nothing).
fn node_name_matches(host: &[String], pattern: &str) -> bool {
    if pattern.is_empty() {
        return false;
    }
    let pattern = node_labels(pattern);
    let printable = |label: &String| !label.is_empty() && label.chars().all(|c| ('\u{21}'..='\u{7f}').contains(&c));
    if pattern.len() != host.len() || !pattern.iter().all(printable) || host.get(1..) != pattern.get(1..) {
        return false;
    }
    let (Some(first), Some(wanted)) = (host.first(), pattern.first()) else { return false };
    let parts: Vec<&str> = wanted.split('*').collect();
    match parts[..] {
        _ if parts.len() == 1 || wanted.contains("xn--") => first == wanted,
        [prefix, suffix] => {
            pattern.len() > 2
                && prefix.len() + suffix.len() <= first.len()
                && first.starts_with(prefix)
                && first.ends_with(suffix)
        }
        // More than one `*`.
        _ => false,
    }
}

/// id-kp-serverAuth (1.3.6.1.5.5.7.3.1), the value bytes of its OID.
const SERVER_AUTH: &[u8] = &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x01];
/// id-ce-extKeyUsage (2.5.29.37).
const EXT_KEY_USAGE: &[u8] = &[0x55, 0x1d, 0x25];
/// id-ce-subjectAltName (2.5.29.17).
const SUBJECT_ALT_NAME: &[u8] = &[0x55, 0x1d, 0x11];
/// id-at-commonName (2.5.4.3).
const COMMON_NAME: &[u8] = &[0x55, 0x04, 0x03];
/// GeneralName's dNSName, `[2] IMPLICIT IA5String`.
const DNS_NAME: u8 = 0x82;

/// The fields of a certificate's `TBSCertificate` (RFC 5280 §4.1) checked above.
#[derive(Debug, PartialEq)]
struct TbsFields<'a> {
    /// notBefore and notAfter, in seconds since the Unix epoch.
    validity: (i64, i64),
    /// The key purpose OIDs of the extKeyUsage extension, if the certificate has one.
    extended_key_usage: Option<Vec<&'a [u8]>>,
    /// What Node reads of the names; `None` when they cannot be read as Node reads them (the
    /// certificate is then valid only for its subjectAltName, as webpki checks it).
    names: Option<CertNames>,
}

/// What Node's `tls.checkServerIdentity` reads of a certificate's names besides its
/// subjectAltName's IP addresses.
#[derive(Debug, PartialEq)]
struct CertNames {
    /// The subjectAltName extension lists a dNSName (whatever its text).
    dns_alt_name: bool,
    /// The subject's commonName values, in order, as text.
    common_names: Vec<String>,
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
        let (subject, after) = expect(rest, SEQUENCE)?;
        // subjectPublicKeyInfo.
        rest = expect(after, SEQUENCE)?.1;
        // issuerUniqueID [1], subjectUniqueID [2], extensions [3]: each optional, in order.
        let mut extended_key_usage = None;
        let mut dns_alt_name = Some(false);
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
                if oid != EXT_KEY_USAGE && oid != SUBJECT_ALT_NAME {
                    continue;
                }
                // critical BOOLEAN DEFAULT FALSE.
                if let Some((BOOLEAN, _, after)) = tlv(fields) {
                    fields = after;
                }
                let (octets, _) = expect(fields, OCTET_STRING)?;
                if oid == SUBJECT_ALT_NAME {
                    dns_alt_name = lists_dns_name(octets);
                    continue;
                }
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
        let names = match (dns_alt_name, common_names(subject)) {
            (Some(dns_alt_name), Some(common_names)) => Some(CertNames { dns_alt_name, common_names }),
            _ => None,
        };
        Some(TbsFields { validity: (not_before, not_after), extended_key_usage, names })
    }
}

/// Whether a subjectAltName extension's value (`GeneralNames`) lists a dNSName.
fn lists_dns_name(octets: &[u8]) -> Option<bool> {
    let (mut names, _) = expect(octets, SEQUENCE)?;
    let mut found = false;
    while !names.is_empty() {
        let (tag, _, after) = tlv(names)?;
        found |= tag == DNS_NAME;
        names = after;
    }
    Some(found)
}

/// The commonName values of a `Name` (the content of its SEQUENCE of RDN SETs), as text.
/// `None` if it cannot be read, or one of them cannot be read as text.
fn common_names(name: &[u8]) -> Option<Vec<String>> {
    let mut rdns = name;
    let mut found = Vec::new();
    while !rdns.is_empty() {
        let (mut attributes, after) = expect(rdns, SET)?;
        rdns = after;
        while !attributes.is_empty() {
            let (attribute, after) = expect(attributes, SEQUENCE)?;
            attributes = after;
            let (oid, value) = expect(attribute, OID)?;
            if oid == COMMON_NAME {
                let (tag, bytes, _) = tlv(value)?;
                found.push(string_text(tag, bytes)?);
            }
        }
    }
    Some(found)
}

/// A directory string as OpenSSL converts it to UTF-8 for Node (`ASN1_STRING_to_UTF8`): UTF8String
/// as it is, BMPString and UniversalString as UCS-2 and UCS-4, the one-byte string types as
/// Latin-1. `None` for another type or a malformed value (OpenSSL converts neither).
fn string_text(tag: u8, bytes: &[u8]) -> Option<String> {
    let wide = |width: usize| -> Option<String> {
        let units = bytes.chunks_exact(width);
        if !units.remainder().is_empty() {
            return None;
        }
        units.map(|unit| char::from_u32(unit.iter().fold(0u32, |acc, &b| (acc << 8) | u32::from(b)))).collect()
    };
    match tag {
        UTF8_STRING => std::str::from_utf8(bytes).ok().map(str::to_owned),
        NUMERIC_STRING | PRINTABLE_STRING | TELETEX_STRING | IA5_STRING | UTC_TIME | GENERALIZED_TIME
        | VISIBLE_STRING => Some(bytes.iter().map(|&b| char::from(b)).collect()),
        UNIVERSAL_STRING => wide(4),
        BMP_STRING => wide(2),
        _ => None,
    }
}

const BOOLEAN: u8 = 0x01;
const INTEGER: u8 = 0x02;
const OCTET_STRING: u8 = 0x04;
const OID: u8 = 0x06;
const UTF8_STRING: u8 = 0x0c;
const NUMERIC_STRING: u8 = 0x12;
const PRINTABLE_STRING: u8 = 0x13;
const TELETEX_STRING: u8 = 0x14;
const IA5_STRING: u8 = 0x16;
const UTC_TIME: u8 = 0x17;
const GENERALIZED_TIME: u8 = 0x18;
const VISIBLE_STRING: u8 = 0x1a;
const UNIVERSAL_STRING: u8 = 0x1c;
const BMP_STRING: u8 = 0x1e;
const SEQUENCE: u8 = 0x30;
const SET: u8 = 0x31;

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
        cert_of(seq(&[]), not_before, not_after, extensions)
    }

    /// The same, with a subject.
    fn cert_of(subject: Vec<u8>, not_before: Vec<u8>, not_after: Vec<u8>, extensions: Option<Vec<Vec<u8>>>) -> Vec<u8> {
        let mut tbs = vec![
            der(0xa0, &der(INTEGER, &[2])),
            der(INTEGER, &[1]),
            seq(&[der(OID, &[1, 2])]),
            seq(&[]),
            seq(&[not_before, not_after]),
            subject,
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

    /// An attribute of a `Name`: its type's OID, its value's tag and its value.
    type Attribute<'a> = (&'a [u8], u8, &'a [u8]);

    /// A `Name` of RDNs, each a set of attributes.
    fn name(rdns: &[&[Attribute<'_>]]) -> Vec<u8> {
        let attribute = |(oid, tag, value): &Attribute<'_>| seq(&[der(OID, oid), der(*tag, value)]);
        let rdn =
            |attributes: &[Attribute<'_>]| der(SET, &attributes.iter().map(attribute).collect::<Vec<_>>().concat());
        seq(&rdns.iter().map(|r| rdn(r)).collect::<Vec<_>>())
    }

    /// A subjectAltName extension listing (tag, value) general names.
    fn alt_names(critical: bool, names: &[(u8, &[u8])]) -> Vec<u8> {
        let list = seq(&names.iter().map(|(tag, value)| der(*tag, value)).collect::<Vec<_>>());
        let mut parts = vec![der(OID, SUBJECT_ALT_NAME)];
        if critical {
            parts.push(der(BOOLEAN, &[0xff]));
        }
        parts.push(der(OCTET_STRING, &list));
        seq(&parts)
    }

    fn names_of(subject: Vec<u8>, extensions: Option<Vec<Vec<u8>>>) -> Option<CertNames> {
        let c = cert_of(subject, utc("240101000000Z"), utc("300101000000Z"), extensions);
        TbsFields::of(&c).expect("the certificate reads").names
    }

    fn cert_names(dns_alt_name: bool, common_names: &[&str]) -> Option<CertNames> {
        Some(CertNames { dns_alt_name, common_names: common_names.iter().map(|n| n.to_string()).collect() })
    }

    const ORGANIZATION: &[u8] = &[0x55, 0x04, 0x0a];
    const IP_ADDRESS: u8 = 0x87;
    const URI: u8 = 0x86;
    const EMAIL: u8 = 0x81;

    #[test]
    fn common_names_are_read_from_every_rdn_in_order() {
        let subject = name(&[
            &[(ORGANIZATION, PRINTABLE_STRING, b"Acme")],
            &[(COMMON_NAME, UTF8_STRING, b"example.com")],
            &[(ORGANIZATION, UTF8_STRING, b"Unit"), (COMMON_NAME, IA5_STRING, b"localhost")],
        ]);
        assert_eq!(names_of(subject, None), cert_names(false, &["example.com", "localhost"]));
        assert_eq!(names_of(seq(&[]), None), cert_names(false, &[]));
        assert_eq!(names_of(name(&[&[(ORGANIZATION, UTF8_STRING, b"Acme")]]), None), cert_names(false, &[]));
    }

    #[test]
    fn common_names_are_text_as_openssl_converts_them_for_node() {
        let cn = |tag: u8, value: &[u8]| names_of(name(&[&[(COMMON_NAME, tag, value)]]), None);
        let utf16: Vec<u8> = "localhost".encode_utf16().flat_map(u16::to_be_bytes).collect();
        let ucs4: Vec<u8> = "localhost".chars().flat_map(|c| u32::from(c).to_be_bytes()).collect();
        for (tag, value) in [
            (PRINTABLE_STRING, &b"localhost"[..]),
            (NUMERIC_STRING, b"localhost"),
            (TELETEX_STRING, b"localhost"),
            (VISIBLE_STRING, b"localhost"),
            (BMP_STRING, &utf16),
            (UNIVERSAL_STRING, &ucs4),
        ] {
            assert_eq!(cn(tag, value), cert_names(false, &["localhost"]), "tag {tag:#x}");
        }
        // The one-byte types are Latin-1.
        assert_eq!(cn(TELETEX_STRING, b"caf\xe9"), cert_names(false, &["caf\u{e9}"]));
        assert_eq!(cn(UTF8_STRING, "café".as_bytes()), cert_names(false, &["café"]));
        // What OpenSSL does not convert leaves no CN to match, whatever the others say.
        for (tag, value) in [
            (UTF8_STRING, &b"caf\xe9"[..]),
            (BMP_STRING, b"\x00l\x00"),
            (BMP_STRING, b"\xd8\x00"),
            (UNIVERSAL_STRING, b"\x00\x11\x00\x00"),
            (INTEGER, b"\x01"),
            (OCTET_STRING, b"localhost"),
        ] {
            let subject = name(&[&[(COMMON_NAME, PRINTABLE_STRING, b"localhost")], &[(COMMON_NAME, tag, value)]]);
            assert_eq!(names_of(subject, None), None, "tag {tag:#x} {value:?}");
        }
    }

    #[test]
    fn only_a_dns_alt_name_counts_as_one() {
        let subject = || name(&[&[(COMMON_NAME, UTF8_STRING, b"localhost")]]);
        let with = |critical, names: &[(u8, &[u8])]| names_of(subject(), Some(vec![alt_names(critical, names)]));
        assert_eq!(with(false, &[(IP_ADDRESS, &[127, 0, 0, 1])]), cert_names(false, &["localhost"]));
        assert_eq!(
            with(true, &[(URI, b"https://x.example"), (EMAIL, b"a@b.example")]),
            cert_names(false, &["localhost"])
        );
        assert_eq!(with(false, &[]), cert_names(false, &["localhost"]));
        assert_eq!(
            with(false, &[(IP_ADDRESS, &[127, 0, 0, 1]), (DNS_NAME, b"example.com")]),
            cert_names(true, &["localhost"])
        );
        // Any dNSName, even one that names nothing.
        assert_eq!(with(true, &[(DNS_NAME, b"")]), cert_names(true, &["localhost"]));
        assert_eq!(with(false, &[(DNS_NAME, b"bad..name")]), cert_names(true, &["localhost"]));
        // A subjectAltName or subject that does not read leaves the names unread, not the rest.
        let bad_alt_names = seq(&[der(OID, SUBJECT_ALT_NAME), der(OCTET_STRING, &der(SET, &[]))]);
        assert_eq!(names_of(subject(), Some(vec![bad_alt_names, eku(false, &[SERVER_AUTH])])), None);
        assert_eq!(names_of(seq(&[der(OID, COMMON_NAME)]), None), None);
    }

    #[test]
    fn host_names_match_as_node_checks_them() {
        let cases: &[(&str, &str, bool)] = &[
            // Case and one trailing dot do not matter.
            ("localhost", "localhost", true),
            ("localhost", "LocalHost", true),
            ("localhost", "localhost.", true),
            ("localhost.", "localhost", true),
            ("localhost", "localhost..", false),
            ("localhost", "example.com", false),
            ("api.example.test", "API.example.test", true),
            // One `*`, in the left-most label, for that one label, under two labels or more.
            ("api.example.test", "*.example.test", true),
            ("example.test", "*.example.test", false),
            ("a.b.example.test", "*.example.test", false),
            ("a.localhost", "*.localhost", false),
            ("api1.example.test", "api*.example.test", true),
            ("api.example.test", "api*.example.test", true),
            ("web.example.test", "api*.example.test", false),
            ("web-api.example.test", "*api.example.test", true),
            ("api.example.test", "a*i.example.test", true),
            ("ai.example.test", "a*i.example.test", true),
            ("i.example.test", "a*i.example.test", false),
            ("a.b.example.test", "a.*.example.test", false),
            ("ab.example.test", "**.example.test", false),
            ("ab.example.test", "a*b*.example.test", false),
            ("xn--a.example.test", "xn--*.example.test", false),
            ("xn--a.example.test", "xn--a.example.test", true),
            // Only printable ASCII, no empty label.
            ("localhost", "", false),
            ("localhost", ".", false),
            ("a.example.test", "a..example.test", false),
            ("local host", "local host", false),
            ("localhost", "localhost\u{0}", false),
            ("xn--caf-dma.test", "café.test", false),
            // JavaScript's toLowerCase maps KELVIN SIGN to `k`, as Rust's does.
            ("k.example.test", "\u{212a}.example.test", true),
        ];
        for &(host, pattern, expected) in cases {
            assert_eq!(node_name_matches(&node_labels(host), pattern), expected, "{host} against {pattern}");
        }
    }

    #[test]
    fn the_common_name_is_read_only_for_a_host_name_and_without_a_dns_alt_name() {
        let names = |dns_alt_name, cn: &str| CertNames { dns_alt_name, common_names: vec![cn.to_string()] };
        let localhost = ServerName::try_from("localhost").unwrap();
        assert!(node_accepts_common_name(&names(false, "localhost"), &localhost));
        assert!(!node_accepts_common_name(&names(true, "localhost"), &localhost));
        let ip = ServerName::try_from("127.0.0.1").unwrap();
        assert!(!node_accepts_common_name(&names(false, "127.0.0.1"), &ip));
        let two = CertNames { dns_alt_name: false, common_names: vec!["example.com".into(), "LOCALHOST".into()] };
        assert!(node_accepts_common_name(&two, &localhost));
        let none = CertNames { dns_alt_name: false, common_names: vec![] };
        assert!(!node_accepts_common_name(&none, &localhost));
    }

    #[test]
    fn names_read_as_x509_parser_reads_them() {
        use rcgen::string::{BmpString, Ia5String, PrintableString, TeletexString, UniversalString};
        use rcgen::{DnType, DnValue, SanType};
        let values = [
            DnValue::Utf8String("localhost".into()),
            DnValue::Utf8String("*.example.test".into()),
            DnValue::PrintableString(PrintableString::try_from("example.com").unwrap()),
            DnValue::Ia5String(Ia5String::try_from("api*.example.test").unwrap()),
            DnValue::TeletexString(TeletexString::try_from("localhost").unwrap()),
            DnValue::BmpString(BmpString::try_from("b\u{f6}rse.example").unwrap()),
            DnValue::UniversalString(UniversalString::try_from("localhost").unwrap()),
        ];
        let dns = |n: &str| SanType::DnsName(Ia5String::try_from(n).unwrap());
        let sans = [
            vec![],
            vec![SanType::IpAddress([127, 0, 0, 1].into())],
            vec![SanType::URI(Ia5String::try_from("https://x.example").unwrap()), dns("example.com")],
            vec![dns("localhost"), SanType::IpAddress([127, 0, 0, 1].into())],
        ];
        let key = rcgen::KeyPair::generate().unwrap();
        for value in values {
            for san in &sans {
                let mut params = rcgen::CertificateParams::default();
                params.distinguished_name = rcgen::DistinguishedName::new();
                params.distinguished_name.push(DnType::OrganizationName, "Acme");
                params.distinguished_name.push(DnType::CommonName, value.clone());
                params.subject_alt_names = san.clone();
                let der = params.self_signed(&key).unwrap().der().to_vec();

                let (_, theirs) = x509_parser::parse_x509_certificate(&der).unwrap();
                let their_cns: Vec<String> = theirs
                    .subject()
                    .iter_common_name()
                    .map(|cn| match cn.as_str() {
                        Ok(text) => text.to_string(),
                        // The types x509-parser leaves as bytes, decoded here.
                        Err(_) => {
                            let bytes = cn.as_slice();
                            match cn.attr_value().tag().0 {
                                0x14 => bytes.iter().map(|&b| char::from(b)).collect(),
                                0x1e => {
                                    let units: Vec<u16> =
                                        bytes.chunks(2).map(|u| u16::from_be_bytes([u[0], u[1]])).collect();
                                    String::from_utf16(&units).unwrap()
                                }
                                0x1c => bytes
                                    .chunks(4)
                                    .map(|u| char::from_u32(u32::from_be_bytes([u[0], u[1], u[2], u[3]])).unwrap())
                                    .collect(),
                                tag => panic!("tag {tag}"),
                            }
                        }
                    })
                    .collect();
                let their_dns = theirs.subject_alternative_name().unwrap().is_some_and(|ext| {
                    ext.value
                        .general_names
                        .iter()
                        .any(|n| matches!(n, x509_parser::extensions::GeneralName::DNSName(_)))
                });
                let ours = TbsFields::of(&der).unwrap().names.unwrap();
                assert_eq!(ours, CertNames { dns_alt_name: their_dns, common_names: their_cns }, "{value:?} {san:?}");
                assert_eq!(ours.common_names.len(), 1);
            }
        }
    }

    #[test]
    fn a_trusted_certificate_without_alt_names_is_valid_for_its_common_name_as_in_node() {
        let at = |secs: u64| UnixTime::since_unix_epoch(std::time::Duration::from_secs(secs));
        let now = days_from_civil(2030, 6, 1) as u64 * 86_400;
        let make = |ca: bool, cn: &str, adjust: &dyn Fn(&mut rcgen::CertificateParams)| {
            let key = rcgen::KeyPair::generate().unwrap();
            let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
            params.is_ca =
                if ca { rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained) } else { rcgen::IsCa::ExplicitNoCa };
            params.distinguished_name = rcgen::DistinguishedName::new();
            params.distinguished_name.push(rcgen::DnType::CommonName, cn);
            params.not_before = rcgen::date_time_ymd(2030, 1, 1);
            params.not_after = rcgen::date_time_ymd(2031, 1, 1);
            adjust(&mut params);
            params.self_signed(&key).unwrap().der().clone()
        };
        let verifier = |certs: &[&CertificateDer<'static>], trusted: bool| {
            let mut roots = rustls::RootCertStore::empty();
            for &c in certs {
                roots.add(c.clone()).unwrap();
            }
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider).build().unwrap();
            NodeTrust::new(webpki, if trusted { certs.iter().map(|&c| c.clone()).collect() } else { vec![] })
        };
        let verify = |v: &NodeTrust, der: &CertificateDer<'_>, host: &str| {
            v.verify_server_cert(der, &[], &ServerName::try_from(host).unwrap().to_owned(), &[], at(now)).map(|_| ())
        };
        let not_for_name = |r: Result<(), Error>| {
            matches!(r, Err(Error::InvalidCertificate(CertificateError::NotValidForNameContext { .. })))
        };

        for ca in [true, false] {
            let localhost = make(ca, "localhost", &|_| {});
            let wildcard = make(ca, "*.example.test", &|_| {});
            let trusting = verifier(&[&localhost, &wildcard], true);
            assert_eq!(verify(&trusting, &localhost, "localhost"), Ok(()), "CA {ca}");
            assert_eq!(verify(&trusting, &wildcard, "api.example.test"), Ok(()), "CA {ca}");
            assert!(not_for_name(verify(&trusting, &wildcard, "example.test")), "CA {ca}");
            assert!(not_for_name(verify(&trusting, &localhost, "example.com")), "CA {ca}");
            // An IP address is never read from the CN.
            let ip = make(ca, "127.0.0.1", &|_| {});
            let trusting_ip = verifier(&[&ip], true);
            assert!(not_for_name(verify(&trusting_ip, &ip, "127.0.0.1")), "CA {ca}");
            // A DNS alt name turns the CN off; an IP alt name does not.
            let named = make(ca, "localhost", &|p| {
                p.subject_alt_names = vec![rcgen::SanType::DnsName("example.com".try_into().unwrap())]
            });
            let ip_named = make(ca, "localhost", &|p| {
                p.subject_alt_names = vec![rcgen::SanType::IpAddress([127, 0, 0, 1].into())]
            });
            let trusting = verifier(&[&named, &ip_named], true);
            assert!(not_for_name(verify(&trusting, &named, "localhost")), "CA {ca}");
            assert_eq!(verify(&trusting, &ip_named, "localhost"), Ok(()), "CA {ca}");
            assert_eq!(verify(&trusting, &ip_named, "127.0.0.1"), Ok(()), "CA {ca}");
            // The dates and purpose still hold.
            let client_only =
                make(ca, "localhost", &|p| p.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth]);
            let later = make(ca, "localhost", &|p| p.not_before = rcgen::date_time_ymd(2030, 7, 1));
            let trusting = verifier(&[&client_only, &later], true);
            let refusal = |r: Result<(), Error>| match r {
                Err(Error::InvalidCertificate(e)) => e,
                other => panic!("{other:?}"),
            };
            assert!(
                matches!(
                    refusal(verify(&trusting, &client_only, "localhost")),
                    CertificateError::InvalidPurpose | CertificateError::InvalidPurposeContext { .. }
                ),
                "CA {ca}"
            );
            assert!(
                matches!(refusal(verify(&trusting, &later, "localhost")), CertificateError::NotValidYetContext { .. }),
                "CA {ca}"
            );
        }
        // The same certificate among the roots but not trusted as itself: webpki's rule alone.
        let plain = make(false, "localhost", &|_| {});
        assert!(not_for_name(verify(&verifier(&[&plain], false), &plain, "localhost")));
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
