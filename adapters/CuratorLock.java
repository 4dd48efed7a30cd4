// Apache Curator's InterProcessMutex (Debian's libcurator-recipes-java, Curator 5.4), the
// ZooKeeper lock most Java services use, as a careful user runs it, behind lockcheck's
// lock-client protocol (docs/LOCK-PROTOCOL.md): one JSON request per line on stdin, one answer
// per line on stdout; logs go to stderr.
//
// The recipe creates a protected ephemeral sequential node under /lockcheck/<key>; the lowest
// holds, a waiter watches its predecessor. The fencing token is the czxid of our lock node (the
// recipe's getLockPath, protected: a subclass reads it). A careful user follows Curator's
// connection states: SUSPENDED means the lock may be lost, LOST that it is; valid answers fail
// from then on (until RECONNECTED, unless LOST).
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.RetryNTimes;
import org.apache.zookeeper.data.Stat;

public class CuratorLock {
  static final ObjectMapper json = new ObjectMapper();

  // The recipe as it is; only its lock node's path made readable.
  static class Mutex extends InterProcessMutex {
    Mutex(CuratorFramework client, String path) { super(client, path); }
    String lockPath() { return getLockPath(); }
  }

  CuratorFramework client;
  Mutex mutex;
  volatile ConnectionState state = ConnectionState.CONNECTED;
  volatile boolean lost;

  CuratorLock(JsonNode init) throws Exception {
    int timeout = Math.max(init.get("timeout_ms").asInt(), 100);
    int session = init.get("ttl_ms").asInt() > 0 ? init.get("ttl_ms").asInt() : 10000;
    client = CuratorFrameworkFactory.builder()
        .connectString(String.join(",", json.convertValue(init.get("nodes"), String[].class)))
        .sessionTimeoutMs(session)
        .connectionTimeoutMs(Math.min(4 * timeout, session)) // Curator wants it within the session
        .retryPolicy(new RetryNTimes(2, 50)) // retry an operation a little, never for long
        .build();
    client.getConnectionStateListenable().addListener((c, s) -> {
      state = s; // on Curator's event thread: just remember
      if (s == ConnectionState.LOST) lost = true;
      // A change, in the client's log; the time is CLOCK_MONOTONIC, as in lockcheck's history.
      if (s != ConnectionState.CONNECTED) System.err.println("connection state " + s + " at t=" + System.nanoTime());
    });
    client.start();
    if (!client.blockUntilConnected(15, TimeUnit.SECONDS)) throw new Exception("no connection to ZooKeeper");
    mutex = new Mutex(client, "/lockcheck/" + init.get("lock").asText());
  }

  ObjectNode acquire(JsonNode req) throws Exception {
    lost = false;
    if (!mutex.acquire(req.get("timeout_ms").asLong(), TimeUnit.MILLISECONDS)) {
      return answer("fail").put("error", "another client holds the lock");
    }
    Stat stat = client.checkExists().forPath(mutex.lockPath());
    if (stat == null) {
      mutex.release();
      return answer("error").put("error", "our lock node vanished right after acquiring");
    }
    return answer("ok").put("token", stat.getCzxid());
  }

  ObjectNode release(JsonNode req) throws Exception {
    try {
      mutex.release(); // a node already gone (session expired) counts as released
    } catch (IllegalMonitorStateException e) {
      return answer("fail").put("error", e.getMessage());
    }
    return answer("ok");
  }

  ObjectNode valid(JsonNode req) {
    if (lost) return answer("fail").put("error", "session lost (LOST)");
    if (!state.isConnected()) return answer("fail").put("error", "connection " + state);
    if (!mutex.isAcquiredInThisProcess()) return answer("fail").put("error", "not held");
    return answer("ok");
  }

  static ObjectNode answer(String type) { return json.createObjectNode().put("type", type); }

  public static void main(String[] args) throws Exception {
    System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    CuratorLock lock = null;
    for (String line; (line = in.readLine()) != null; ) {
      JsonNode req = json.readTree(line);
      String type = req.get("type").asText();
      ObjectNode out;
      try {
        switch (type) {
          case "init": lock = new CuratorLock(req); out = answer("ok").put("valid", true); break;
          case "acquire": out = lock.acquire(req); break;
          case "release": out = lock.release(req); break;
          case "valid": out = lock.valid(req); break;
          case "close": lock.client.close(); out = answer("ok"); break;
          default: out = answer("error").put("error", "unknown request type " + type);
        }
      } catch (Exception e) { // the library failed: the outcome is unknown
        out = answer("error").put("error", e.toString());
      }
      out.put("in_reply_to", req.get("id").asLong());
      System.out.println(json.writeValueAsString(out));
      System.out.flush();
      if (type.equals("close")) break;
    }
    System.exit(0);
  }
}
