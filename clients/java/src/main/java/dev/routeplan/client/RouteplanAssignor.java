package dev.routeplan.client;

import java.io.IOException;
import java.lang.System.Logger.Level;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.Configurable;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigException;

/**
 * A consumer group's partition assignor (classic group protocol) that gives each consumer the
 * partitions a routeplan {@code partition_assignment} table names for it (docs/routing-spec.md
 * §5). Configured through the consumer's properties:
 *
 * <pre>
 * partition.assignment.strategy=dev.routeplan.client.RouteplanAssignor
 * group.protocol=classic                               (the default of kafka-clients 4.x)
 * group.instance.id=c0                                 (per consumer: its name in the plan)
 * routeplan.table.location=https://routeplan.example   (or a store directory, or a table file)
 * routeplan.stream=orders
 * routeplan.topic=orders                               (optional; default: the stream's name)
 * routeplan.http.token=...                             (optional: a bearer token)
 * </pre>
 *
 * <p>At each rebalance the group's leader reads the stream's LATEST table. The plan is followed
 * when it is a valid {@code partition_assignment} table of the stream, every member subscribes
 * to the topic and nothing else, and the group has as many members as the table has consumers
 * that read partitions. A member whose {@code group.instance.id} is a consumer's name gets that
 * consumer's partitions; the others are paired in order (the remaining consumer names sorted;
 * the remaining members sorted by group.instance.id, then member id), so that a restarted
 * static member gets its partitions back. A partition of the topic the table does not name goes
 * to the member with the fewest partitions (the first in that order on ties); one the table
 * names that the topic lacks is left out. Both are logged. A group of another size than the
 * plan's gets the plan's partitions spread over its members by the loads it was planned on
 * ({@code planning_load.partition_load}: Graham's LPT, {@link #spread}). Otherwise — no table, a
 * refused one, a key_routing table, another topic, another group size and no loads — the
 * assignment is {@link CooperativeStickyAssignor}'s. Either way the reason is logged.
 *
 * <p>It supports the COOPERATIVE and the EAGER rebalance protocols, as the cooperative-sticky
 * fallback does (so a group rebalances incrementally whichever of the two assigns): a partition
 * the plan moves away from the member that owns it now is left unassigned for one rebalance;
 * its owner revokes it, rejoins, and the next rebalance gives it to its planned member. The
 * partitions that do not move keep being consumed throughout. A new version of the table is
 * followed at the next rebalance: {@link RouteplanRebalancer} asks for one when LATEST changes.
 */
public class RouteplanAssignor implements ConsumerPartitionAssignor, Configurable {
  /** The assignor's name in the group protocol. */
  public static final String NAME = "routeplan";
  public static final String LOCATION = RoutingPartitioner.LOCATION;
  public static final String STREAM = RoutingPartitioner.STREAM;
  public static final String TOKEN = RoutingPartitioner.TOKEN;
  /** The topic the table assigns (default: the stream's name). */
  public static final String TOPIC = "routeplan.topic";

  private static final System.Logger LOG = System.getLogger(RouteplanAssignor.class.getName());

  private final CooperativeStickyAssignor fallback = new CooperativeStickyAssignor();
  private Latest latest;
  private String stream;
  private String topic;
  /** Why the last assignment fell back, or null when it followed the plan (for the tests). */
  volatile String fallbackReason;

  @Override
  public void configure(Map<String, ?> configs) {
    String location = Configs.location(configs, ConfigException::new);
    stream = Configs.string(configs, STREAM);
    topic = Configs.string(configs, TOPIC);
    try {
      latest = new Latest(location, stream, Configs.options(configs));
    } catch (IllegalArgumentException e) {
      throw new ConfigException("routeplan: " + e.getMessage());
    }
  }

  @Override
  public String name() {
    return NAME;
  }

  @Override
  public List<RebalanceProtocol> supportedProtocols() {
    return List.of(RebalanceProtocol.COOPERATIVE, RebalanceProtocol.EAGER);
  }

  /** The fallback's user data (its generation), so that it can assign at any rebalance. */
  @Override
  public ByteBuffer subscriptionUserData(Set<String> topics) {
    return fallback.subscriptionUserData(topics);
  }

  @Override
  public void onAssignment(Assignment assignment, ConsumerGroupMetadata metadata) {
    fallback.onAssignment(assignment, metadata);
  }

  @Override
  public GroupAssignment assign(Cluster metadata, GroupSubscription groupSubscription) {
    if (latest == null) {
      throw new IllegalStateException("RouteplanAssignor is not configured");
    }
    Map<String, Subscription> members = groupSubscription.groupSubscription();
    Table table;
    try {
      table = latest.read();
    } catch (InvalidTableException e) {
      return fallBack(metadata, groupSubscription, "invalid table: " + e.getMessage());
    } catch (IOException | RuntimeException e) {
      return fallBack(metadata, groupSubscription, "no table at " + latest.where() + ": " + e);
    }
    String planTopic = topic != null ? topic : stream != null ? stream : table.stream;
    String why = unfit(table, planTopic, metadata, members);
    if (why != null) {
      return fallBack(metadata, groupSubscription, table + ": " + why);
    }
    int partitions = metadata.partitionCountForTopic(planTopic);
    String size = otherSize(table, members);
    Map<String, List<TopicPartition>> assigned;
    if (size == null) {
      assigned = follow(table, planTopic, partitions, members);
      fallbackReason = null;
    } else if (table.partitionLoads == null) {
      return fallBack(metadata, groupSubscription,
          table + ": " + size + ", and it has no partition loads to spread");
    } else {
      LOG.log(Level.WARNING, "routeplan: {0}: {1}: its partitions are spread by its loads over "
          + "the members", table, size);
      fallbackReason = table + ": " + size;
      assigned = apply(spread(table.partitionLoads, partitions, members), planTopic, members,
          "the loads of " + table);
    }
    Map<String, Assignment> result = new HashMap<>();
    assigned.forEach((member, owned) -> result.put(member, new Assignment(owned)));
    return new GroupAssignment(result);
  }

  private GroupAssignment fallBack(Cluster metadata, GroupSubscription group, String reason) {
    LOG.log(Level.WARNING, "routeplan: the group is assigned by {0} ({1} members), not by the "
        + "plan: {2}", fallback.name(), group.groupSubscription().size(), reason);
    fallbackReason = reason;
    return fallback.assign(metadata, group);
  }

  /** Why {@code table} cannot assign the group, or null when it can. */
  private String unfit(Table table, String planTopic, Cluster metadata,
      Map<String, Subscription> members) {
    if (!Table.PARTITION_ASSIGNMENT.equals(table.kind)) {
      return "a " + table.kind + " table, not a partition_assignment one";
    }
    if (stream != null && !stream.equals(table.stream)) {
      return "the table is of stream '" + table.stream + "', not '" + stream + "'";
    }
    for (Map.Entry<String, Subscription> e : members.entrySet()) {
      if (!Set.copyOf(e.getValue().topics()).equals(Set.of(planTopic))) {
        return "member " + e.getKey() + " subscribes to " + e.getValue().topics()
            + ", not to topic '" + planTopic + "' alone";
      }
    }
    if (metadata.partitionCountForTopic(planTopic) == null) {
      return "no metadata for topic '" + planTopic + "'";
    }
    return null;
  }

  /** Why the plan's consumers cannot be the group's members, or null: as many of each. */
  private static String otherSize(Table table, Map<String, Subscription> members) {
    int consumers = readers(table).size();
    if (consumers == members.size()) {
      return null;
    }
    return "the group has " + members.size() + " members, the plan " + consumers
        + " consumers that read partitions";
  }

  /**
   * Partition → member when the group is not the plan's size: the plan's partitions spread by
   * the loads it was planned on (Graham's LPT rule). Heaviest first (ties: the lower partition),
   * each to the member carrying the least load so far (ties: fewer partitions, then the members'
   * order: group.instance.id, then member id). A partition the plan has no load for counts as
   * the mean of those it has.
   */
  static Map<Integer, String> spread(double[] loads, int partitions,
      Map<String, Subscription> members) {
    double mean = 0;
    for (double x : loads) {
      mean += x / loads.length;
    }
    List<String> order = new ArrayList<>(members.keySet());
    order.sort(Comparator.comparing((String m) -> members.get(m).groupInstanceId().orElse(""))
        .thenComparing(Comparator.naturalOrder()));
    double[] load = new double[order.size()];
    int[] count = new int[order.size()];
    List<Integer> heaviestFirst = new ArrayList<>();
    for (int p = 0; p < partitions; p++) {
      heaviestFirst.add(p);
    }
    double fill = mean;
    heaviestFirst.sort(Comparator.comparingDouble((Integer p) -> -(p < loads.length ? loads[p]
        : fill)).thenComparing(Comparator.naturalOrder()));
    Map<Integer, String> target = new TreeMap<>();
    for (int p : heaviestFirst) {
      int least = 0;
      for (int i = 1; i < order.size(); i++) {
        if (load[i] < load[least] || (load[i] == load[least] && count[i] < count[least])) {
          least = i;
        }
      }
      load[least] += p < loads.length ? loads[p] : mean;
      count[least]++;
      target.put(p, order.get(least));
    }
    return target;
  }

  /** The table's consumers that read partitions, in the table's order. */
  static List<String> readers(Table table) {
    Set<String> reading = new HashSet<>(table.partitionConsumer.values());
    List<String> names = new ArrayList<>();
    for (String name : table.workers) {
      if (reading.contains(name)) {
        names.add(name);
      }
    }
    return names;
  }

  /**
   * Consumer → member: a member whose group.instance.id is a consumer's name gets it; the others
   * pair in order (consumer names sorted; members by group.instance.id, then member id). As
   * many members as consumers.
   */
  static Map<String, String> pair(List<String> consumers, Map<String, Subscription> members) {
    Map<String, String> paired = new TreeMap<>();
    Set<String> named = new HashSet<>(consumers);
    List<String> rest = new ArrayList<>();
    for (Map.Entry<String, Subscription> e : members.entrySet()) {
      String instance = e.getValue().groupInstanceId().orElse(null);
      if (instance != null && named.contains(instance) && !paired.containsKey(instance)) {
        paired.put(instance, e.getKey());
      } else {
        rest.add(e.getKey());
      }
    }
    rest.sort(Comparator.comparing((String m) -> members.get(m).groupInstanceId().orElse(""))
        .thenComparing(Comparator.naturalOrder()));
    List<String> open = new ArrayList<>(new TreeSet<>(consumers));
    open.removeAll(paired.keySet());
    for (int i = 0; i < open.size(); i++) {
      paired.put(open.get(i), rest.get(i));
    }
    return paired;
  }

  /**
   * Each member's partitions of {@code topic} ({@code partitions} of them) by the plan, less
   * those another member owns now (cooperative: they are assigned at the next rebalance, once
   * released).
   */
  static Map<String, List<TopicPartition>> follow(Table table, String topic, int partitions,
      Map<String, Subscription> members) {
    Map<String, String> consumerMember = pair(readers(table), members);
    Map<Integer, String> target = target(table, topic, partitions, consumerMember);
    return apply(target, topic, members, table + " (consumer -> member: " + consumerMember + ")");
  }

  /**
   * Each member's partitions of {@code topic} by {@code target} (partition → member), less those
   * another member owns now (cooperative: they are assigned at the next rebalance, once
   * released); logged as assigned by {@code by}.
   */
  static Map<String, List<TopicPartition>> apply(Map<Integer, String> target, String topic,
      Map<String, Subscription> members, String by) {
    Map<Integer, Set<String>> owners = owners(topic, members);
    Map<String, List<TopicPartition>> assigned = new LinkedHashMap<>();
    for (String member : members.keySet()) {
      assigned.put(member, new ArrayList<>());
    }
    List<Integer> held = new ArrayList<>();
    for (Map.Entry<Integer, String> e : target.entrySet()) {
      Set<String> owner = owners.getOrDefault(e.getKey(), Set.of());
      if (!owner.isEmpty() && !owner.contains(e.getValue())) {
        held.add(e.getKey()); // another member still owns it: it is revoked first
      } else {
        assigned.get(e.getValue()).add(new TopicPartition(topic, e.getKey()));
      }
    }
    LOG.log(Level.INFO, "routeplan: topic {0} assigned by {1} to {2} members{3}", topic, by,
        members.size(), held.isEmpty() ? ""
        : "; partitions " + held + " move: assigned once their owners have released them");
    return assigned;
  }

  /** Partition → member by the plan, for every partition of the topic. */
  private static Map<Integer, String> target(Table table, String topic, int partitions,
      Map<String, String> consumerMember) {
    Map<Integer, String> target = new TreeMap<>();
    Map<String, Integer> load = new LinkedHashMap<>();
    consumerMember.values().forEach(m -> load.put(m, 0)); // in consumer-name order
    List<Integer> unplanned = new ArrayList<>();
    for (int p = 0; p < partitions; p++) {
      String consumer = table.partitionConsumer.get(p);
      if (consumer == null) {
        unplanned.add(p);
      } else {
        String member = consumerMember.get(consumer);
        target.put(p, member);
        load.merge(member, 1, Integer::sum);
      }
    }
    for (int p : unplanned) {
      String least = null;
      for (Map.Entry<String, Integer> e : load.entrySet()) {
        if (least == null || e.getValue() < load.get(least)) {
          least = e.getKey();
        }
      }
      target.put(p, least);
      load.merge(least, 1, Integer::sum);
    }
    if (!unplanned.isEmpty()) {
      LOG.log(Level.WARNING, "routeplan: {0} does not name partitions {1} of topic {2}: each "
          + "goes to the member with the fewest", table, unplanned, topic);
    }
    List<Integer> missing = new ArrayList<>();
    for (int p : table.partitionConsumer.keySet()) {
      if (p >= partitions) {
        missing.add(p);
      }
    }
    if (!missing.isEmpty()) {
      LOG.log(Level.WARNING, "routeplan: {0} names partitions {1}, which topic {2} does not "
          + "have ({3} partitions): left out", table, missing, topic, partitions);
    }
    return target;
  }

  /** Partition → the members that say they own it now (cooperative protocol). */
  private static Map<Integer, Set<String>> owners(String topic,
      Map<String, Subscription> members) {
    Map<Integer, Set<String>> owners = new HashMap<>();
    for (Map.Entry<String, Subscription> e : members.entrySet()) {
      for (TopicPartition tp : e.getValue().ownedPartitions()) {
        if (Objects.equals(tp.topic(), topic)) {
          owners.computeIfAbsent(tp.partition(), p -> new LinkedHashSet<>()).add(e.getKey());
        }
      }
    }
    return owners;
  }
}
