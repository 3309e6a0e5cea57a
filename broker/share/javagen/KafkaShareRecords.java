// Prints the share-group records of kafkaShareRecords (records_test.go),
// key and value in hex, as Kafka 4.4's group coordinator serializes them
// (GroupCoordinatorRecordSerde: the key prefixed by its record type, the
// value by its version). Run with
//   java -cp "$TRIBUTARY_KAFKA_LIB/*" KafkaShareRecords.java
import org.apache.kafka.coordinator.group.generated.*;
import org.apache.kafka.coordinator.group.GroupCoordinatorRecordSerde;
import org.apache.kafka.coordinator.common.runtime.CoordinatorRecord;
import org.apache.kafka.server.common.ApiMessageAndVersion;
import org.apache.kafka.common.protocol.*;
import org.apache.kafka.common.Uuid;
import java.nio.ByteBuffer;
import java.util.*;
public class KafkaShareRecords {
  static String hex(byte[] b) {
    StringBuilder sb = new StringBuilder();
    for (byte x : b) sb.append(String.format("%02x", x));
    return sb.toString();
  }
  static void print(String name, ApiMessage key, ApiMessage value) {
    GroupCoordinatorRecordSerde serde = new GroupCoordinatorRecordSerde();
    CoordinatorRecord r = CoordinatorRecord.record(key, new ApiMessageAndVersion(value, (short) 0));
    byte[] k = serde.serializeKey(r), v = serde.serializeValue(r);
    // And back, as kafka-dump-log --offsets-decoder reads them.
    CoordinatorRecord back = serde.deserialize(ByteBuffer.wrap(k), ByteBuffer.wrap(v));
    if (!back.equals(r)) throw new IllegalStateException(name + " does not read back");
    System.out.println(name + " " + hex(k) + " " + hex(v));
  }
  public static void main(String[] a) {
    Uuid t = new Uuid(0x0100000000000000L, 0L);
    print("member", new ShareGroupMemberMetadataKey().setGroupId("g").setMemberId("m"),
      new ShareGroupMemberMetadataValue().setRackId(null).setClientId("c").setClientHost("/127.0.0.1").setSubscribedTopicNames(List.of("t")));
    print("metadata", new ShareGroupMetadataKey().setGroupId("g"),
      new ShareGroupMetadataValue().setEpoch(3).setMetadataHash(0x0102030405060708L));
    print("targetmeta", new ShareGroupTargetAssignmentMetadataKey().setGroupId("g"),
      new ShareGroupTargetAssignmentMetadataValue().setAssignmentEpoch(3));
    print("targetmember", new ShareGroupTargetAssignmentMemberKey().setGroupId("g").setMemberId("m"),
      new ShareGroupTargetAssignmentMemberValue().setTopicPartitions(List.of(
        new ShareGroupTargetAssignmentMemberValue.TopicPartition().setTopicId(t).setPartitions(List.of(0, 2)))));
    print("current", new ShareGroupCurrentMemberAssignmentKey().setGroupId("g").setMemberId("m"),
      new ShareGroupCurrentMemberAssignmentValue().setMemberEpoch(3).setPreviousMemberEpoch(2).setState((byte) 0).setAssignedPartitions(List.of(
        new ShareGroupCurrentMemberAssignmentValue.TopicPartitions().setTopicId(t).setPartitions(List.of(0, 2)))));
    print("statepart", new ShareGroupStatePartitionMetadataKey().setGroupId("g"),
      new ShareGroupStatePartitionMetadataValue().setInitializingTopics(List.of()).setDeletingTopics(List.of()).setInitializedTopics(List.of(
        new ShareGroupStatePartitionMetadataValue.TopicPartitionsInfo().setTopicId(t).setTopicName("t").setPartitions(List.of(0, 2)))));
    Uuid u = new Uuid(0x0200000000000000L, 0L), d = new Uuid(0x0300000000000000L, 0L);
    print("statepart3", new ShareGroupStatePartitionMetadataKey().setGroupId("g"),
      new ShareGroupStatePartitionMetadataValue().setInitializingTopics(List.of(
        new ShareGroupStatePartitionMetadataValue.TopicPartitionsInfo().setTopicId(u).setTopicName("u").setPartitions(List.of(1))))
      .setInitializedTopics(List.of(
        new ShareGroupStatePartitionMetadataValue.TopicPartitionsInfo().setTopicId(t).setTopicName("t").setPartitions(List.of(0, 2))))
      .setDeletingTopics(List.of(new ShareGroupStatePartitionMetadataValue.TopicInfo().setTopicId(d).setTopicName("v"))));
  }
}
