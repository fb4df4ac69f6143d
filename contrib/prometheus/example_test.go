package prometheus_test

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/shaledb/shale"
	shaleprom "github.com/shaledb/shale/contrib/prometheus"
	"github.com/shaledb/shale/vfs"
)

// A DB's collector registered with a registry, which promhttp.HandlerFor
// would serve; the db label tells this DB's metrics from other DBs'.
func ExampleNewCollector() {
	db, err := shale.Open("db", &shale.Options{FS: vfs.NewMem(), CreateIfMissing: true, Statistics: shale.NewStatistics()})
	if err != nil {
		panic(err)
	}
	defer db.Close()
	c := shaleprom.NewCollector(db, shaleprom.WithConstLabels(prometheus.Labels{"db": "users"}))
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)

	if err := db.Put([]byte("k"), []byte("value"), nil); err != nil {
		panic(err)
	}
	n, err := testutil.GatherAndCount(reg, "shale_up", "shale_user_written_bytes_total")
	fmt.Println(n, err)
	// Output: 2 <nil>
}
