// Prints kafkaClassicMember (consumer_classic_record_test.go): run with
//   java -cp "$TRIBUTARY_KAFKA_LIB/*" KafkaMemberRecord.java
import org.apache.kafka.coordinator.group.generated.*;
import org.apache.kafka.common.protocol.*;
import java.nio.ByteBuffer;
import java.util.*;
public class KafkaMemberRecord {
  public static void main(String[] a) {
    ConsumerGroupMemberMetadataValue v = new ConsumerGroupMemberMetadataValue().setInstanceId(null).setRackId(null).setSubscribedTopicRegex(null).setServerAssignor(null)
      .setClientId("c").setClientHost("/127.0.0.1").setSubscribedTopicNames(List.of("t")).setRebalanceTimeoutMs(30000)
      .setClassicMemberMetadata(new ConsumerGroupMemberMetadataValue.ClassicMemberMetadata().setSessionTimeoutMs(10000)
        .setSupportedProtocols(List.of(new ConsumerGroupMemberMetadataValue.ClassicProtocol().setName("range").setMetadata(new byte[]{0,1,0,0,0,1,0,1,'t'}))));
    ByteBuffer b = MessageUtil.toVersionPrefixedByteBuffer((short)0, v);
    StringBuilder sb = new StringBuilder();
    while (b.hasRemaining()) sb.append(String.format("%02x", b.get()));
    System.out.println(sb);
  }
}
