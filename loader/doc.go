// Package loader loads topic partitions from a Kafka-compatible broker into
// Parquet files on a target file system (HDFS or a local directory), exactly
// once, in three steps:
//
//  1. Plan: for every partition of the job's topics, the range from the
//     committed offset to the high watermark is cut into work units. The
//     plan is written to the target before any work starts; a failed run is
//     resumed with its own plan, so ranges never shift.
//  2. Execute: each unit is fetched with kafka-go, decoded by formats into
//     Arrow batches, split by event hour and streamed into Parquet files in
//     the run's staging directory, in a directory of its own attempt, and
//     ends with the attempt's result file. Two workers racing on one unit
//     both finish; the commit takes the complete result with the smallest
//     attempt id, whoever commits.
//  3. Commit: the staged files are renamed into place (their names carry
//     topic, partition and offsets, so moving them twice is harmless), then
//     the job's state file, which holds the committed offsets, is replaced
//     atomically: that rename is the commit point. The offsets also go to
//     the broker under the group tributary-loader.<job>, and the run gets a
//     manifest and a _SUCCESS marker.
//
// A crash anywhere leaves either an open plan (resumed by the next run) or a
// committed state (whose finishing steps the next run repeats, idempotently),
// so every offset lands in the lake exactly once.
//
// Layout under the target (see layout.go for the names):
//
//	<topic>/dt=YYYY-MM-DD/hr=HH/<topic>+<partition>+<first>+<last>.parquet
//	<topic>/dt=YYYY-MM-DD/hr=HH/_SUCCESS       the hour is complete
//	_errors/<topic>/<topic>+<partition>+<from>+<to>.jsonl   bad records
//	_tributary/plans/<run>.json                 plans, kept
//	_tributary/staging/<run>/...                work in progress
//	_tributary/state/<job>.json                 committed offsets (the commit point)
//	_tributary/runs/<run>/manifest.json, _SUCCESS
//
// A Loader is safe for concurrent use by its own workers; two loaders must
// not run the same job at once (the jobs scheduler holds a lease for that).
package loader
