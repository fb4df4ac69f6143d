#!/bin/sh
# install-rocksdb.sh installs the RocksDB library and headers the rocksdb
# engine (go run -tags rocksdb .) links against: Debian's or Ubuntu's
# librocksdb-dev, which pulls in its compression libraries' -dev packages.
# It does nothing when they are installed already. grocksdb v1.7.14, which
# go.mod pins, matches RocksDB 7.8 (Debian 12's librocksdb-dev); another
# RocksDB may need another grocksdb.
set -eu

need=""
for pkg in librocksdb-dev libsnappy-dev liblz4-dev libzstd-dev zlib1g-dev libbz2-dev; do
	if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
		need="$need $pkg"
	fi
done
if [ -z "$need" ]; then
	echo "install-rocksdb.sh: librocksdb-dev is installed"
	exit 0
fi

sudo=""
if [ "$(id -u)" != 0 ]; then
	sudo="sudo"
fi
echo "install-rocksdb.sh: installing$need"
$sudo apt-get update
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y $need
