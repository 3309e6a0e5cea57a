package server

import (
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// handler serves one API.
type handler struct {
	// min and max are the versions served.
	min, max int16
	// listFromZero advertises v0 as the minimum while serving from min:
	// Kafka lists Produce from v0 while refusing v0-v2, because librdkafka
	// turns compression off when the minimum is not 0 (KAFKA-18659).
	listFromZero bool
	// internal APIs serve other brokers and are not listed to clients.
	internal bool
	fn       func(c *conn, req kmsg.Request) (kmsg.Response, error)
}

// typed adapts a handler of one request type to the table.
func typed[Req kmsg.Request, Resp kmsg.Response](f func(*conn, Req) (Resp, error)) func(*conn, kmsg.Request) (kmsg.Response, error) {
	return func(c *conn, r kmsg.Request) (kmsg.Response, error) {
		resp, err := f(c, r.(Req))
		if err != nil {
			return nil, err
		}
		return resp, nil
	}
}

// handlers is every API the broker serves. Versions start at Kafka 4.x's
// baseline (KIP-896) and stop where a newer version would need something we
// do not have yet. Produce v12, AddPartitionsToTxn v5, EndTxn v5 and
// TxnOffsetCommit v5 are transactions v2 (KIP-890 part 2, txn_v2.go); the
// v4 versions' only change, the TRANSACTION_ABORTABLE error, is never
// returned.
func (s *Server) handlers() map[int16]handler {
	return map[int16]handler{
		kmsg.Produce.Int16():              {min: 3, max: 12, listFromZero: true, fn: typed(s.handleProduce)},
		kmsg.Fetch.Int16():                {min: 4, max: 16, fn: typed(s.handleFetch)},
		kmsg.ListOffsets.Int16():          {min: 1, max: 11, fn: typed(s.handleListOffsets)},
		kmsg.Metadata.Int16():             {min: 0, max: 12, fn: typed(s.handleMetadata)},
		kmsg.ApiVersions.Int16():          {min: 0, max: 4, fn: typed(s.handleApiVersions)},
		kmsg.CreateTopics.Int16():         {min: 2, max: 7, fn: typed(s.handleCreateTopics)},
		kmsg.InitProducerID.Int16():       {min: 0, max: 5, fn: typed(s.handleInitProducerID)},
		kmsg.OffsetForLeaderEpoch.Int16(): {min: 2, max: 4, fn: typed(s.handleOffsetForLeaderEpoch)},
		kmsg.DescribeCluster.Int16():      {min: 0, max: 1, fn: typed(s.handleDescribeCluster)},
		kmsg.DescribeQuorum.Int16():       {min: 0, max: 1, fn: typed(s.handleDescribeQuorum)},
		kmsg.FindCoordinator.Int16():      {min: 0, max: 6, fn: typed(s.handleFindCoordinator)},

		// Groups and committed offsets (broker/group).
		kmsg.OffsetCommit.Int16():   {min: 2, max: 10, fn: typed(s.handleOffsetCommit)},
		kmsg.OffsetFetch.Int16():    {min: 1, max: 10, fn: typed(s.handleOffsetFetch)},
		kmsg.JoinGroup.Int16():      {min: 0, max: 9, fn: typed(s.handleJoinGroup)},
		kmsg.Heartbeat.Int16():      {min: 0, max: 4, fn: typed(s.handleHeartbeat)},
		kmsg.LeaveGroup.Int16():     {min: 0, max: 5, fn: typed(s.handleLeaveGroup)},
		kmsg.SyncGroup.Int16():      {min: 0, max: 5, fn: typed(s.handleSyncGroup)},
		kmsg.DescribeGroups.Int16(): {min: 0, max: 6, fn: typed(s.handleDescribeGroups)},
		kmsg.ListGroups.Int16():     {min: 0, max: 5, fn: typed(s.handleListGroups)},
		kmsg.DeleteGroups.Int16():   {min: 0, max: 2, fn: typed(s.handleDeleteGroups)},
		kmsg.OffsetDelete.Int16():   {min: 0, max: 0, fn: typed(s.handleOffsetDelete)},

		// KIP-848 consumer groups (broker/group/consumer_group.go).
		kmsg.ConsumerGroupHeartbeat.Int16(): {min: 0, max: 1, fn: typed(s.handleConsumerGroupHeartbeat)},
		kmsg.ConsumerGroupDescribe.Int16():  {min: 0, max: 1, fn: typed(s.handleConsumerGroupDescribe)},

		// KIP-932 share groups (broker/share, share.go).
		kmsg.ShareGroupHeartbeat.Int16():       {min: 1, max: 1, fn: typed(s.handleShareGroupHeartbeat)},
		kmsg.ShareGroupDescribe.Int16():        {min: 1, max: 1, fn: typed(s.handleShareGroupDescribe)},
		kmsg.ShareFetch.Int16():                {min: 1, max: 2, fn: typed(s.handleShareFetch)},
		kmsg.ShareAcknowledge.Int16():          {min: 1, max: 2, fn: typed(s.handleShareAcknowledge)},
		kmsg.DescribeShareGroupOffsets.Int16(): {min: 0, max: 1, fn: typed(s.handleDescribeShareGroupOffsets)},
		kmsg.AlterShareGroupOffsets.Int16():    {min: 0, max: 0, fn: typed(s.handleAlterShareGroupOffsets)},
		kmsg.DeleteShareGroupOffsets.Int16():   {min: 0, max: 0, fn: typed(s.handleDeleteShareGroupOffsets)},

		// Transactions (broker/txn, txn.go).
		kmsg.AddPartitionsToTxn.Int16():   {min: 0, max: 5, fn: typed(s.handleAddPartitionsToTxn)},
		kmsg.AddOffsetsToTxn.Int16():      {min: 0, max: 4, fn: typed(s.handleAddOffsetsToTxn)},
		kmsg.EndTxn.Int16():               {min: 0, max: 5, fn: typed(s.handleEndTxn)},
		kmsg.TxnOffsetCommit.Int16():      {min: 0, max: 5, fn: typed(s.handleTxnOffsetCommit)},
		kmsg.WriteTxnMarkers.Int16():      {min: 1, max: 2, fn: typed(s.handleWriteTxnMarkers)},
		kmsg.DescribeProducers.Int16():    {min: 0, max: 0, fn: typed(s.handleDescribeProducers)},
		kmsg.DescribeTransactions.Int16(): {min: 0, max: 0, fn: typed(s.handleDescribeTransactions)},
		kmsg.ListTransactions.Int16():     {min: 0, max: 1, fn: typed(s.handleListTransactions)},

		// The share coordinator's persister RPCs, between brokers (the
		// cluster secret or CLUSTER_ACTION), listed as Kafka 4.4 lists them.
		kmsg.ReadShareGroupState.Int16():   {min: 0, max: 0, fn: typed(s.handleReadShareGroupState)},
		kmsg.WriteShareGroupState.Int16():  {min: 0, max: 1, fn: typed(s.handleWriteShareGroupState)},
		kmsg.DeleteShareGroupState.Int16(): {min: 0, max: 0, fn: typed(s.handleDeleteShareGroupState)},
		// The group coordinator's to the share coordinators, for the
		// share-group offsets administrators read and reset.
		kmsg.InitializeShareGroupState.Int16():  {min: 0, max: 0, fn: typed(s.handleInitializeShareGroupState)},
		kmsg.ReadShareGroupStateSummary.Int16(): {min: 0, max: 1, fn: typed(s.handleReadShareGroupStateSummary)},

		// Topic and config administration.
		kmsg.DeleteTopics.Int16():            {min: 1, max: 6, fn: typed(s.handleDeleteTopics)},
		kmsg.DeleteRecords.Int16():           {min: 0, max: 2, fn: typed(s.handleDeleteRecords)},
		kmsg.DescribeConfigs.Int16():         {min: 1, max: 4, fn: typed(s.handleDescribeConfigs)},
		kmsg.AlterConfigs.Int16():            {min: 0, max: 2, fn: typed(s.handleAlterConfigs)},
		kmsg.DescribeLogDirs.Int16():         {min: 1, max: 5, fn: typed(s.handleDescribeLogDirs)},
		kmsg.CreatePartitions.Int16():        {min: 0, max: 3, fn: typed(s.handleCreatePartitions)},
		kmsg.IncrementalAlterConfigs.Int16(): {min: 0, max: 1, fn: typed(s.handleIncrementalAlterConfigs)},
		kmsg.DescribeTopicPartitions.Int16(): {min: 0, max: 0, fn: typed(s.handleDescribeTopicPartitions)},

		// Leadership and replica placement, on the active controller.
		kmsg.ElectLeaders.Int16():               {min: 0, max: 2, fn: typed(s.handleElectLeaders)},
		kmsg.AlterPartitionAssignments.Int16():  {min: 0, max: 0, fn: typed(s.handleAlterPartitionReassignments)},
		kmsg.ListPartitionReassignments.Int16(): {min: 0, max: 0, fn: typed(s.handleListPartitionReassignments)},
		kmsg.UnregisterBroker.Int16():           {min: 0, max: 0, fn: typed(s.handleUnregisterBroker)},
		kmsg.UpdateFeatures.Int16():             {min: 0, max: 2, fn: typed(s.handleUpdateFeatures)},

		// Between the brokers of a cluster and the active controller.
		kmsg.BrokerRegistration.Int16():  {min: 0, max: 4, internal: true, fn: typed(s.handleBrokerRegistration)},
		kmsg.BrokerHeartbeat.Int16():     {min: 0, max: 1, internal: true, fn: typed(s.handleBrokerHeartbeat)},
		kmsg.AllocateProducerIDs.Int16(): {min: 0, max: 0, internal: true, fn: typed(s.handleAllocateProducerIDs)},
		kmsg.AlterPartition.Int16():      {min: 2, max: 3, internal: true, fn: typed(s.handleAlterPartition)},
	}
}

// apiKeys is the ApiVersions list, by key: on a controller listener the
// controller APIs, internal ones included, as Kafka's controllers list them.
func (s *Server) apiKeys(controller bool) []kmsg.ApiVersionsResponseApiKey {
	keys := make([]kmsg.ApiVersionsResponseApiKey, 0, len(s.apis))
	for k, h := range s.apis {
		if controller && !controllerAPIs[k] || !controller && h.internal {
			continue
		}
		min := h.min
		if h.listFromZero {
			min = 0
		}
		keys = append(keys, kmsg.ApiVersionsResponseApiKey{ApiKey: k, MinVersion: min, MaxVersion: h.max})
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].ApiKey < keys[j].ApiKey })
	return keys
}
