# lib.sh: shell functions shared by the CI scripts (sourced, not run).

# as_root runs a command as root (directly, or through sudo when available).
as_root() {
	if [ "$(id -u)" -eq 0 ]; then
		"$@"
	elif command -v sudo >/dev/null 2>&1; then
		sudo "$@"
	else
		echo "ci: need root (or sudo) to run: $*" >&2
		return 1
	fi
}

# have_ca_bundle reports whether go will find root certificates: SSL_CERT_FILE,
# or one of the bundle files Go's crypto/x509 reads on Linux. A minimal Debian
# root (debootstrap --variant=minbase, the debian:bookworm image) has none, and
# neither wine64 nor mingw-w64 pulls ca-certificates in, so without it every
# module download from proxy.golang.org fails with "x509: certificate signed
# by unknown authority".
have_ca_bundle() {
	local f
	for f in "${SSL_CERT_FILE:-}" /etc/ssl/certs/ca-certificates.crt \
		/etc/pki/tls/certs/ca-bundle.crt /etc/ssl/ca-bundle.pem \
		/etc/pki/tls/cacert.pem /etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem \
		/etc/ssl/cert.pem; do
		if [ -n "$f" ] && [ -s "$f" ]; then
			return 0
		fi
	done
	return 1
}

# apt_install updates the package lists and installs the given packages
# without recommends, quietly; it fails when either step does.
apt_install() {
	as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
		as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}
