//! TLS certificates for tests, made by OpenSSL's command line (a tool we did not write): CAs and
//! certificates for 127.0.0.1 that they sign, as PEM files in a folder.

use std::path::Path;
use std::process::Command;

/// Runs `openssl` with `args` in `dir`.
fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl").current_dir(dir).args(args).output().expect("openssl runs");
    assert!(out.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// Makes a CA named `name` in `dir`: `name.pem` and `name.key`.
pub fn ca(dir: &Path, name: &str) {
    let (pem, key, subject) = (format!("{name}.pem"), format!("{name}.key"), format!("/CN={name}"));
    openssl(
        dir,
        &[
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-days",
            "2",
            "-keyout",
            &key,
            "-out",
            &pem,
            "-subj",
            &subject,
        ],
    );
}

/// Makes a certificate `name` for 127.0.0.1 and localhost, signed by the CA `by`, in `dir`:
/// `name.pem` and `name.key`.
pub fn leaf(dir: &Path, name: &str, by: &str) {
    let (pem, key, csr, ext) =
        (format!("{name}.pem"), format!("{name}.key"), format!("{name}.csr"), format!("{name}.ext"));
    std::fs::write(dir.join(&ext), "subjectAltName=IP:127.0.0.1,DNS:localhost\n").expect("write the extension file");
    let subject = format!("/CN={name}");
    openssl(
        dir,
        &[
            "req",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            &key,
            "-out",
            &csr,
            "-subj",
            &subject,
        ],
    );
    let (ca_pem, ca_key) = (format!("{by}.pem"), format!("{by}.key"));
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            &csr,
            "-CA",
            &ca_pem,
            "-CAkey",
            &ca_key,
            "-CAcreateserial",
            "-days",
            "2",
            "-out",
            &pem,
            "-extfile",
            &ext,
        ],
    );
}
