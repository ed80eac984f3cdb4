/**
 * Durable runs on one server with a SQLite file, in processes of their own
 * (`fixtures/durableChild.ts`) that die by SIGKILL, their own at a kill point
 * or the test's: the server started again on the same file resumes each run
 * whose task is still in progress, its recorded steps answered from their
 * records. A step's side effect happens once, except when the process died
 * after the side effect and before its record (`<k>:after`): then that step
 * runs once more, as the docs say of a step (at least once). A question
 * asked in the run waits across a restart; a run started again more often
 * than `maxResumes` ends FAILED; a cancel stops a resumed run.
 */
import { TaskState } from "@a2a-js/sdk"
import { describe, expect, it } from "@effect/vitest"
import { Effect, FastCheck, Scope } from "effect"
import * as path from "node:path"
import * as Durable from "./fixtures/durable.js"

const ended = [TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_FAILED, TaskState.TASK_STATE_CANCELED]

const points = [1, 2, 3].flatMap((k) => ["before", "after", "between"].map((where) => `${k}:${where}`))

/**
 * What a run of three steps with these kill points does, as the contract
 * says: each kill point fires once, in order, when the run reaches it; a
 * recorded step does not run (so its `before` and `after` points are not
 * reached again), code between steps does. How often each step's side
 * effect happens, and how often the process dies.
 */
const expected = (kills: ReadonlyArray<string>) => {
  const recorded = new Set<number>()
  const counts = [0, 0, 0]
  let fired = 0
  const reach = (point: string) => kills[fired] === point && ++fired > 0
  for (;;) {
    const died = (() => {
      for (let k = 1; k <= 3; k++) {
        if (!recorded.has(k)) {
          if (reach(`${k}:before`)) return true
          counts[k - 1]!++
          if (reach(`${k}:after`)) return true
          recorded.add(k)
        }
        if (reach(`${k}:between`)) return true
      }
      return false
    })()
    if (!died) return { counts, deaths: fired }
  }
}

describe("a durable agent on one server with a SQLite file", () => {
  it.scopedLive(
    "killed at any point of its three steps, or at two in turn, it finishes after a restart, each side effect once, twice only when killed between a step's side effect and its record",
    () =>
      Effect.gen(function*() {
        const dir = yield* Durable.workDir
        const sideFile = path.join(dir, "side-effects")
        const servers = yield* Durable.lineage("sqlite", path.join(dir, "tasks.db"), sideFile)
        const scope = yield* Effect.scope
        let cases = 0
        let died = 0
        const check = (kills: ReadonlyArray<string>) =>
          Effect.gen(function*() {
            const task = yield* Durable.send(servers.current(), { kills })
            const { deaths, task: end } = yield* Durable.through(servers, task.id, ended)
            const want = expected(kills)
            cases++
            died += deaths
            const seen = {
              state: TaskState[end.status!.state],
              deaths,
              counts: Durable.sideEffects(sideFile, task.id),
              history: Durable.agentHistory(end),
              artifacts: end.artifacts.map((artifact) => artifact.artifactId)
            }
            // Each event once in the task, though the run was started again: what was stored was not published again.
            expect(seen, `kill points ${kills.join(", ")}`).toEqual({
              state: "TASK_STATE_COMPLETED",
              deaths: want.deaths,
              counts: want.counts,
              history: Durable.wholeRun(),
              artifacts: ["report"]
            })
            // At least once; once more only for each death between the step's side effect and its record.
            expect(
              want.counts.every((count, k) =>
                count >= 1 && count <= 1 + kills.filter((point) => point === `${k + 1}:after`).length
              )
            ).toBe(true)
          })
        // Each kill point alone (the examples, which count in numRuns), then a sequence of two, the second in the resumed
        // run: each case costs a process start or two, the longest part of the test.
        yield* Effect.promise(() =>
          FastCheck.assert(
            FastCheck.asyncProperty(
              FastCheck.array(FastCheck.constantFrom(...points), { minLength: 2, maxLength: 2 }),
              (kills) => Effect.runPromise(Scope.extend(check(kills), scope))
            ),
            { numRuns: points.length + 1, endOnFailure: true, examples: points.map((point) => [[point]]) }
          )
        )
        // Every single point was tried, and each killed its server.
        expect(cases).toBe(points.length + 1)
        expect(died).toBeGreaterThanOrEqual(points.length)
      }),
    120_000
  )

  it.scopedLive("killed by SIGKILL while a step runs, then started again: its durable run finishes", () =>
    Effect.gen(function*() {
      const dir = yield* Durable.workDir
      const sideFile = path.join(dir, "side-effects")
      const filename = path.join(dir, "tasks.db")
      const servers = yield* Durable.lineage("sqlite", filename, sideFile)
      const task = yield* Durable.send(servers.current(), { slow: 2, slowMs: 60_000 })
      yield* Durable.noted(sideFile, task.id, "enter2")
      servers.current().kill()
      yield* Durable.death(servers.current())
      // What the dead server left in its database: the run, never resumed, and the record of step 1 alone.
      expect(Durable.sqliteRecords(filename, task.id)).toEqual({ resumes: [0], steps: ["step1"] })
      const { deaths, task: end } = yield* Durable.through(servers, task.id, ended)
      expect(deaths).toBe(1)
      expect(end.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
      expect(Durable.agentHistory(end)).toEqual(Durable.wholeRun())
      // Step 2 was killed in its wait, before its side effect; the run after the restart did it.
      expect(Durable.sideEffects(sideFile, task.id)).toEqual([1, 1, 1])
      expect(Durable.linesOf(sideFile, task.id).filter((line) => line === "enter2")).toHaveLength(2)
      // The run's row and records go with its end (read every 50 ms for at most 5 s: they may go just after it).
      let left = Durable.sqliteRecords(filename, task.id)
      for (let i = 0; i < 100 && left.resumes.length + left.steps.length > 0; i++) {
        yield* Effect.sleep("50 millis")
        left = Durable.sqliteRecords(filename, task.id)
      }
      expect(left).toEqual({ resumes: [], steps: [] })
    }))

  it.scopedLive(
    "a question asked in the run survives a restart: the answer sent after it continues the run, and a death after the answer keeps it",
    () =>
      Effect.gen(function*() {
        const dir = yield* Durable.workDir
        const sideFile = path.join(dir, "side-effects")
        const servers = yield* Durable.lineage("sqlite", path.join(dir, "tasks.db"), sideFile)
        // The run answered dies in step 2 after its side effect: the run resumed after it has the answer still.
        const task = yield* Durable.send(servers.current(), { ask: true, kills: ["2:after"] })
        const asked = yield* Durable.until(servers.current(), task.id)
        expect(asked.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED)
        expect(Durable.statusText(asked)).toBe("Which date?")
        servers.current().kill()
        yield* Durable.death(servers.current())
        const server = yield* servers.next
        const still = yield* Durable.getTask(server, task.id)
        expect(still.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED)
        yield* Durable.answer(server, task.id, "Tuesday")
        const { deaths, task: end } = yield* Durable.through(servers, task.id, ended)
        expect(deaths).toBe(1)
        expect(end.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
        expect(Durable.agentHistory(end)).toEqual(
          Durable.wholeRun("done Tuesday").toSpliced(1, 0, "Which date?")
        )
        // Step 1 ran before the question, in the first process, and was not run again; step 2 ran again after
        // the death between its side effect and its record.
        expect(Durable.sideEffects(sideFile, task.id)).toEqual([1, 2, 1])
      })
  )

  it.scopedLive(
    "a run that kills its process every time ends FAILED with an error id once maxResumes (1) is spent",
    () =>
      Effect.gen(function*() {
        const dir = yield* Durable.workDir
        const sideFile = path.join(dir, "side-effects")
        const filename = path.join(dir, "tasks.db")
        const bound = { DURABLE_MAX_RESUMES: "1" }
        const first = yield* Durable.start("sqlite", filename, sideFile, bound)
        const task = yield* Durable.send(first, { kills: ["2:before"], always: true })
        yield* Durable.death(first)
        // Started again once: it resumes the run, which kills its process again.
        const exit = yield* Durable.startToDie("sqlite", filename, sideFile, bound)
        expect(exit.signal).toBe("SIGKILL")
        expect(Durable.linesOf(sideFile, task.id).filter((line) => line === "enter2")).toHaveLength(2)
        const last = yield* Durable.start("sqlite", filename, sideFile, bound)
        const end = yield* Durable.until(last, task.id, ended)
        expect(end.status?.state).toBe(TaskState.TASK_STATE_FAILED)
        expect(Durable.statusText(end)).toMatch(/^Agent execution failed\. \(error_id: [0-9a-f]+\)$/)
        // The second resume did not run the agent: step 2 was entered by the first run and one resume only.
        yield* Effect.sleep("300 millis")
        expect(Durable.linesOf(sideFile, task.id).filter((line) => line === "enter2")).toHaveLength(2)
        expect(Durable.sideEffects(sideFile, task.id)).toEqual([1, 0, 0])
      }),
    60_000
  )

  it.scopedLive("a cancel of a resumed run stops it: the task is CANCELED, its later steps never happen, and it is not resumed again", () =>
    Effect.gen(function*() {
      const dir = yield* Durable.workDir
      const sideFile = path.join(dir, "side-effects")
      const servers = yield* Durable.lineage("sqlite", path.join(dir, "tasks.db"), sideFile)
      const task = yield* Durable.send(servers.current(), { kills: ["1:between"], slow: 2, slowMs: 60_000 })
      yield* Durable.death(servers.current())
      const server = yield* servers.next
      // The resumed run is in step 2's wait.
      yield* Durable.noted(sideFile, task.id, "enter2")
      const canceled = yield* Effect.promise(() => server.client.cancelTask({ id: task.id, tenant: "", metadata: {} }))
      expect(canceled.status?.state).toBe(TaskState.TASK_STATE_CANCELED)
      const end = yield* Durable.until(server, task.id, ended)
      expect(end.status?.state).toBe(TaskState.TASK_STATE_CANCELED)
      // Killed and started again: a canceled run is not resumed.
      server.kill()
      yield* Durable.death(server)
      const after = yield* servers.next
      yield* Effect.sleep("1 second")
      expect((yield* Durable.getTask(after, task.id)).status?.state).toBe(TaskState.TASK_STATE_CANCELED)
      expect(Durable.linesOf(sideFile, task.id).filter((line) => !line.startsWith("on "))).toEqual([
        "enter1",
        "step1",
        "killed 0 1:between",
        "enter2"
      ])
    }))
})
