package dev.routeplan.client;

import java.nio.charset.StandardCharsets;
import java.util.Map;
import org.apache.kafka.clients.producer.ProducerInterceptor;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.header.Headers;

/**
 * Stamps each record a {@link RoutingPartitioner} routes with the header {@code routing_version}:
 * the version of the table the partitioner routed it by, as decimal UTF-8 text ("7"). One more
 * property of the producer turns it on:
 *
 * <pre>
 * partitioner.class=dev.routeplan.client.RoutingPartitioner
 * interceptor.classes=dev.routeplan.client.RoutingVersionInterceptor
 * </pre>
 *
 * <p>{@code KafkaProducer.send} runs the interceptors, then the partitioner, in the sending
 * thread, before the record's headers become read-only: this interceptor hands the record to
 * the partitioner, which stamps it with the version of the very table it routes it by, so a
 * record sent while a new version is being installed names the version that placed it. List it
 * last when the producer has other interceptors that replace the record (the partitioner stamps
 * only the record this interceptor saw; otherwise it logs once that it stamped nothing). A
 * record sent with an explicit partition is not routed, and not stamped.
 */
public class RoutingVersionInterceptor implements ProducerInterceptor<Object, Object> {
  /** The record this thread is sending, between {@link #onSend} and the partitioner. */
  private static final ThreadLocal<ProducerRecord<?, ?>> SENDING = new ThreadLocal<>();

  @Override
  public void configure(Map<String, ?> configs) {
    Object partitioner = configs.get("partitioner.class");
    if (!isRoutingPartitioner(partitioner)) {
      throw new ConfigException("interceptor.classes names " + getClass().getName()
          + ", which stamps what " + RoutingPartitioner.class.getName()
          + " routes, but partitioner.class is " + partitioner);
    }
  }

  private static boolean isRoutingPartitioner(Object value) {
    if (value instanceof Class) {
      return RoutingPartitioner.class.isAssignableFrom((Class<?>) value);
    }
    if (value == null) {
      return false;
    }
    try {
      Class<?> c = Class.forName(String.valueOf(value).strip(), false,
          RoutingVersionInterceptor.class.getClassLoader());
      return RoutingPartitioner.class.isAssignableFrom(c);
    } catch (ClassNotFoundException e) {
      return false;
    }
  }

  @Override
  public ProducerRecord<Object, Object> onSend(ProducerRecord<Object, Object> record) {
    SENDING.set(record.partition() == null ? record : null);
    return record;
  }

  /** The record this thread handed over and has not sent yet, or null; taken once. */
  static ProducerRecord<?, ?> take() {
    ProducerRecord<?, ?> record = SENDING.get();
    if (record != null) {
      SENDING.remove();
    }
    return record;
  }

  /** Sets {@code routing_version} in {@code headers} to {@code version} (replacing any). */
  public static void stamp(Headers headers, long version) {
    headers.remove(RoutingSpec.VERSION_HEADER);
    headers.add(RoutingSpec.VERSION_HEADER, value(version));
  }

  /** The header's value for {@code version}: its decimal digits as UTF-8. */
  public static byte[] value(long version) {
    return Long.toString(version).getBytes(StandardCharsets.UTF_8);
  }

  @Override
  public void onAcknowledgement(RecordMetadata metadata, Exception exception) {}

  @Override
  public void close() {
    SENDING.remove();
  }
}
