// A lock adapter for lockcheck: put YOUR lock here, behind the lock-client protocol.
//
// lockcheck starts this program once per client and writes one JSON request per line on its
// stdin (init, acquire, release, valid, close); it answers each with one JSON line on stdout:
// {"in_reply_to": <id>, "type": "ok" | "fail" | "error", ...}. stdout is the protocol's: log to
// stderr. The protocol is described in lockcheck's docs/LOCK-PROTOCOL.md.
//
// As written it is Apache Curator's InterProcessMutex on ZooKeeper: a protected ephemeral
// sequential node, the lowest holds; the fencing token is the czxid of our node; a holder whose
// connection was suspended or lost no longer believes it holds. Replace the bodies of acquire(),
// release() and valid() with calls to your own lock; keep the answers' shape. It runs as a
// source file (java -cp ... MyLock.java) with Debian's libcurator-recipes-java and
// libjackson2-databind-java (or the same jars from your build).
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

public class MyLock {
  static final ObjectMapper json = new ObjectMapper();

  // Curator's recipe, with its lock node's path made readable for the fencing token.
  static class Mutex extends InterProcessMutex {
    Mutex(CuratorFramework client, String path) { super(client, path); }
    String lockPath() { return getLockPath(); }
  }

  final CuratorFramework client;
  final Mutex mutex;
  volatile boolean suspended;

  // init: client (its name), nodes (["host:port", ...], through the client's own proxies), lock
  // (the key), ttl_ms (the session timeout), timeout_ms (bound on one command).
  MyLock(JsonNode init) throws Exception {
    int timeout = Math.max(init.get("timeout_ms").asInt(), 100);
    int session = init.get("ttl_ms").asInt() > 0 ? init.get("ttl_ms").asInt() : 10000;
    client = CuratorFrameworkFactory.builder()
        .connectString(String.join(",", json.convertValue(init.get("nodes"), String[].class)))
        .sessionTimeoutMs(session)
        .connectionTimeoutMs(Math.min(4 * timeout, session))
        .retryPolicy(new RetryNTimes(2, 50))
        .build();
    client.getConnectionStateListenable().addListener((c, s) -> {
      if (s != ConnectionState.CONNECTED && s != ConnectionState.RECONNECTED) suspended = true;
    });
    client.start();
    if (!client.blockUntilConnected(15, TimeUnit.SECONDS)) throw new Exception("no connection to ZooKeeper");
    mutex = new Mutex(client, "/my-lock/" + init.get("lock").asText());
  }

  // One attempt, never waiting longer than timeout_ms: ok (held, with the fencing token), fail
  // (certainly not held) or error (unknown: an exception).
  ObjectNode acquire(JsonNode req) throws Exception {
    suspended = false;
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
      mutex.release();
    } catch (IllegalMonitorStateException e) {
      return answer("fail").put("error", e.getMessage());
    }
    return answer("ok");
  }

  // Asked before each write: does this client still believe it holds the lock?
  ObjectNode valid(JsonNode req) {
    if (suspended || !client.getZookeeperClient().isConnected() || !mutex.isAcquiredInThisProcess()) {
      return answer("fail").put("error", "not held, or the connection was suspended or lost");
    }
    return answer("ok");
  }

  static ObjectNode answer(String type) { return json.createObjectNode().put("type", type); }

  public static void main(String[] args) throws Exception {
    System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    MyLock lock = null;
    for (String line; (line = in.readLine()) != null; ) {
      JsonNode req = json.readTree(line);
      String type = req.get("type").asText();
      ObjectNode out;
      try {
        switch (type) {
          case "init": lock = new MyLock(req); out = answer("ok").put("valid", true); break;
          case "acquire": out = lock.acquire(req); break;
          case "release": out = lock.release(req); break;
          case "valid": out = lock.valid(req); break;
          case "close": lock.client.close(); out = answer("ok"); break;
          default: out = answer("error").put("error", "unknown request " + type);
        }
      } catch (Exception e) { // a timeout, a lost connection: the outcome is unknown
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
