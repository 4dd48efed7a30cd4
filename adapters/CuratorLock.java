// Apache Curator's locks (Debian's libcurator-recipes-java, Curator 5.4), the ZooKeeper locks most
// Java services use, as a careful user runs them, behind lockcheck's lock-client protocol
// (docs/LOCK-PROTOCOL.md): one JSON request per line on stdin, one answer per line on stdout;
// logs go to stderr.
//
// The recipes create a protected ephemeral sequential node under /lockcheck/<key>; the lowest
// holds, a waiter watches its predecessor. The fencing token is the czxid of our lock node (the
// recipe's getLockPath, protected: a subclass reads it). A careful user follows Curator's
// connection states: SUSPENDED means the lock may be lost, LOST that it is; valid answers fail
// from then on (until RECONNECTED, unless LOST).
//
// Which recipe, by the design (the first argument):
//   mutex         InterProcessMutex                                                (design curator)
//   rw            InterProcessReadWriteLock: its read lock for a client whose role is read, its
//                 write lock for a writer                                           (curator-rw)
//   rw-downgrade  as rw, and a writer downgrades, as the recipe's documentation allows: its
//                 release takes the read lock while it holds the write lock, then releases the
//                 write lock; it keeps the read lock for its next section, whose acquire answers
//                 at once with role "read", and gives it back at that section's release
//                                                                          (curator-rw-downgrade)
// Every release first announces the program point before-release.
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
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.RetryNTimes;
import org.apache.zookeeper.data.Stat;

public class CuratorLock {
  static final ObjectMapper json = new ObjectMapper();
  static BufferedReader in;

  // The recipes as they are; only their lock node's path made readable.
  interface Recipe {
    boolean acquire(long time, TimeUnit unit) throws Exception;
    void release() throws Exception;
    boolean isAcquiredInThisProcess();
    String lockPath();
  }

  static class Mutex extends InterProcessMutex implements Recipe {
    Mutex(CuratorFramework client, String path) { super(client, path); }
    public String lockPath() { return getLockPath(); }
  }

  // InterProcessReadWriteLock's two sides, made as its constructor makes them (a read lock knows
  // its write lock: it is granted at once to the thread that holds the write lock).
  static class Write extends InterProcessReadWriteLock.WriteLock implements Recipe {
    Write(CuratorFramework client, String path) { super(client, path, null); }
    public String lockPath() { return getLockPath(); }
  }

  static class Read extends InterProcessReadWriteLock.ReadLock implements Recipe {
    Read(CuratorFramework client, String path, Write write) { super(client, path, null, write); }
    public String lockPath() { return getLockPath(); }
  }

  CuratorFramework client;
  Recipe lock; // what this client acquires: the mutex, or its side of the read/write lock
  Read read;   // rw-downgrade: the read side a writer downgrades to
  boolean downgrade;
  boolean downgraded; // holds the read lock its last write section downgraded to
  volatile ConnectionState state = ConnectionState.CONNECTED;
  volatile boolean lost;

  CuratorLock(JsonNode init, String mode) throws Exception {
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
    String path = "/lockcheck/" + init.get("lock").asText();
    if (mode.equals("mutex")) {
      lock = new Mutex(client, path);
      return;
    }
    Write write = new Write(client, path);
    read = new Read(client, path, write);
    downgrade = mode.equals("rw-downgrade");
    String role = init.path("role").asText();
    switch (role) {
      case "read": lock = read; break;
      case "write": lock = write; break;
      default: throw new Exception("client " + init.get("client").asText() + " has role \"" + role + "\", want read or write");
    }
  }

  ObjectNode acquire(JsonNode req) throws Exception {
    lost = false;
    if (downgraded) { // the read lock this writer downgraded to is still ours
      return held(read, "read");
    }
    if (!lock.acquire(req.get("timeout_ms").asLong(), TimeUnit.MILLISECONDS)) {
      return answer("fail").put("error", "another client holds the lock");
    }
    return held(lock, lock == read ? "read" : "write");
  }

  // The answer for a lock we hold: its node's czxid as the token, and which side we hold.
  ObjectNode held(Recipe r, String role) throws Exception {
    Stat stat = client.checkExists().forPath(r.lockPath());
    if (stat == null) {
      r.release();
      downgraded = false;
      return answer("error").put("error", "our lock node vanished right after acquiring");
    }
    ObjectNode out = answer("ok").put("token", stat.getCzxid());
    return read == null ? out : out.put("role", role);
  }

  ObjectNode release(JsonNode req) throws Exception {
    point("before-release");
    try {
      if (downgraded) {
        downgraded = false;
        read.release();
      } else if (downgrade && lock != read) {
        // Downgrade: the read lock first (granted at once: we hold the write lock), then the
        // write lock goes. Anyone queued for the write lock must still wait for our read lock.
        if (!read.acquire(req.get("timeout_ms").asLong(), TimeUnit.MILLISECONDS)) {
          lock.release();
          return answer("error").put("error", "downgrade: the read lock was not granted; released the write lock");
        }
        downgraded = true;
        lock.release();
      } else {
        lock.release(); // a node already gone (session expired) counts as released
      }
    } catch (IllegalMonitorStateException e) {
      return answer("fail").put("error", e.getMessage());
    }
    return answer("ok");
  }

  ObjectNode valid(JsonNode req) {
    if (lost) return answer("fail").put("error", "session lost (LOST)");
    if (!state.isConnected()) return answer("fail").put("error", "connection " + state);
    if (!(downgraded ? read : lock).isAcquiredInThisProcess()) return answer("fail").put("error", "not held");
    return answer("ok");
  }

  static ObjectNode answer(String type) { return json.createObjectNode().put("type", type); }

  // A program point: the worker may freeze the whole client here; it says when to go on.
  static void point(String name) throws Exception {
    System.out.println(json.writeValueAsString(json.createObjectNode().put("type", "point").put("name", name)));
    System.out.flush();
    String line = in.readLine();
    if (line == null || !json.readTree(line).path("type").asText().equals("continue")) {
      throw new Exception("expected continue after point " + name + ", got " + line);
    }
  }

  public static void main(String[] args) throws Exception {
    String mode = args.length > 0 ? args[0] : "mutex";
    if (!mode.equals("mutex") && !mode.equals("rw") && !mode.equals("rw-downgrade")) {
      System.err.println("CuratorLock: unknown mode " + mode + " (mutex, rw, rw-downgrade)");
      System.exit(2);
    }
    System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
    in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    CuratorLock lock = null;
    for (String line; (line = in.readLine()) != null; ) {
      JsonNode req = json.readTree(line);
      String type = req.get("type").asText();
      ObjectNode out;
      try {
        switch (type) {
          case "init": lock = new CuratorLock(req, mode); out = answer("ok").put("valid", true); break;
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
