/**
 * Two servers on one SQLite file, started together and both pushing: their
 * migrations, retention sweeps, outboxes and stores wait for each other
 * rather than fail (SQLITE_BUSY, or a table the other just created).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import * as A2AServer from "../src/A2AServer.js"
import { callerOn, keyOf, serve, taskOf } from "./fixtures/callers.js"
import { captureLogs, eventually } from "./fixtures/serverAgents.js"
import { webhook } from "./fixtures/webhook.js"

describe("two servers on one SQLite file", () => {
  it.scopedLive(
    "started together, with retention, each pushes its task's events: both delivered, no warning logged",
    () => {
      const logs = captureLogs()
      return Effect.gen(function*() {
        const dir = yield* Effect.acquireRelease(
          Effect.sync(() => Fs.mkdtempSync(Path.join(Os.tmpdir(), "a2a-shared-sqlite-"))),
          (dir) => Effect.sync(() => Fs.rmSync(dir, { recursive: true, force: true }))
        )
        const options = {
          taskStore: A2AServer.TaskStoreConfig.Sqlite({ filename: Path.join(dir, "tasks.db"), retention: "1 hour" }),
          push: { allowPushTargets: ["127.0.0.1"] }
        }
        const hook = yield* webhook()
        const servers = yield* Effect.all([serve(options), serve(options)], { concurrency: "unbounded" })
        const tokens = servers.map(() => `tok-${crypto.randomUUID()}`)
        const tasks = yield* Effect.forEach(
          servers,
          ({ server }, i) =>
            Effect.flatMap(callerOn(server.url, "JSONRPC", keyOf("a")), (a) =>
              Effect.map(
                a.sendWith(`hello ${i}`, {
                  taskPushNotificationConfig: {
                    tenant: "",
                    id: "",
                    taskId: "",
                    authentication: undefined,
                    url: hook.url,
                    token: tokens[i]!
                  }
                }),
                taskOf
              )),
          { concurrency: "unbounded" }
        )
        for (const [i, token] of tokens.entries()) {
          const final = yield* eventually(
            Effect.sync(() =>
              hook.received.filter((r) =>
                r.headers["x-a2a-notification-token"] === token &&
                JSON.parse(r.body).statusUpdate?.status?.state === "TASK_STATE_COMPLETED"
              )
            ),
            (found) => found.length > 0,
            500
          )
          expect(final[0]!.body).toContain(tasks[i]!.id)
        }
        // Time for both outboxes' sweeps (every 5 seconds) to run against each other.
        yield* Effect.sleep("6 seconds")
        expect(logs.lines.filter((line) => line.level === "WARN" || line.level === "ERROR")).toEqual([])
      }).pipe(Effect.provide(logs.layer))
    },
    30_000
  )
})
