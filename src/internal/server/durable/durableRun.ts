/**
 * A durable agent's run, as it goes: where its request comes from (the
 * request it first started with, kept in the store), what its steps
 * recorded, and which of its events are in the store already.
 *
 * A run that starts again (its process died, or its question got an
 * answer) runs the agent from the start. Its recorded steps return their
 * records; what it publishes again is dropped up to the place the store
 * has: each publish has a place, one more than the last, and a recorded
 * step sets the place to where the step left it, unless the place is
 * further on already (steps that ran at once). As long as the agent
 * takes its steps and publishes in the same order each time, the places
 * fall where they fell before, so the stream goes on from the store's last
 * event with nothing twice. The store's place is the task's metadata
 * `effect-a2a/place`, which each event's metadata sets as it is appended:
 * written with the event, never apart from it.
 *
 * @internal
 */
import { Message, SendMessageRequest, Task } from "@a2a-js/sdk"
import { type RequestContext, ServerCallContext } from "@a2a-js/sdk/server"
import * as Cause from "effect/Cause"
import * as Data from "effect/Data"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as FiberId from "effect/FiberId"
import * as Option from "effect/Option"
import type * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import type * as AgentExecutor from "../../../AgentExecutor.js"
import type * as internalProgress from "../../progress.js"
import { fromUserMessage } from "../../wire/parts.js"
import * as taskState from "../../wire/taskState.js"
import { scopeOf } from "../caller/authentication.js"
import type { DurableRuns, RunKey } from "./durableRuns.js"

/** The metadata key of an event's place in its durable run (see above). @internal */
export const placeKey = "effect-a2a/place"

/** What the server hands a durable agent's executor (`A2AServer`, through the option under this key). @internal */
export const durableOption: unique symbol = Symbol.for("effect-a2a/AgentExecutor/durableRuns")

/** @internal */
export interface DurableWiring {
  readonly runs: DurableRuns
  readonly maxResumes: number
}

/** @internal */
export interface DurableOptions {
  readonly [durableOption]?: DurableWiring | undefined
}

/** Marks the request context of a run started again after its process died. @internal */
const resumes = new WeakSet<RequestContext>()

/** `context`, known from now on as a resume. @internal */
export const resuming = (context: RequestContext): RequestContext => {
  resumes.add(context)
  return context
}

/** @internal */
export const isResume = (context: RequestContext): boolean => resumes.has(context)

/** The request contexts of runs left, not ended, by a process that stops (or lost its claim). */
const left = new WeakSet<RequestContext>()

/** Notes that the run of `context` was left for another start to resume. @internal */
export const leave = (context: RequestContext): void => void left.add(context)

/** Whether the run of `context` was left for another start to resume: its claim then lapses, not goes. @internal */
export const wasLeft = (context: RequestContext): boolean => left.has(context)

/** Why a run that was started again too often ended FAILED. @internal */
export class ResumesSpent extends Data.TaggedError("ResumesSpent")<{ readonly message: string }> {}

/** Why a durable run could not go on: its records do not read back as its steps say. @internal */
export class RecordUnreadable extends Data.TaggedError("RecordUnreadable")<{ readonly message: string }> {}

/** What a run started from, as the store keeps it. @internal */
export interface Origin {
  readonly request: SendMessageRequest
  readonly task: Task | undefined
  /** The task's place when the run started: its places go on from there. */
  readonly base: number
}

const encodeOrigin = (origin: Origin): string =>
  JSON.stringify({
    request: SendMessageRequest.toJSON(origin.request),
    task: origin.task === undefined ? undefined : Task.toJSON(origin.task),
    base: origin.base
  })

/** @internal */
export const decodeOrigin = (text: string): Origin => {
  const json = JSON.parse(text) as { request: unknown; task: unknown; base: number }
  return {
    request: SendMessageRequest.fromJSON(json.request),
    task: json.task === undefined ? undefined : Task.fromJSON(json.task),
    base: json.base
  }
}

/** The run of the task of `context`, as the store names it. @internal */
export const keyOf = (context: RequestContext): RunKey => ({
  ...scopeOf(context.context ?? anonymous),
  taskId: context.taskId
})

// Every request context of our handler has a call context: this stands for one that would not.
const anonymous = new ServerCallContext()

/** The place the store has reached for `task`: 0 before any durable run published. @internal */
export const placeOf = (task: Task | undefined): number => {
  const place = task?.metadata?.[placeKey]
  return typeof place === "number" ? place : 0
}

/** A step's record: its exit, as the step's schemas encode it, and the place it left the run at. */
interface StepRecord {
  readonly place: number
  readonly exit: { readonly _tag: "Success"; readonly value: unknown } | {
    readonly _tag: "Failure"
    readonly error: unknown
  }
}

const unreadable = (step: string, error: ParseResult.ParseError) =>
  new RecordUnreadable({ message: `The record of step "${step}" does not match its schema: ${error.message}` })

/**
 * The durable side of one execution of a run: the places of its events,
 * and its steps as their records answer them. A new one each time the run
 * starts again.
 */
export class DurableRun implements internalProgress.Durable {
  private place: number
  private readonly names = new Map<string, number>()
  private questions = 0
  /** The question the run stopped on, set as it stops. */
  asking: { readonly n: number; readonly question: string } | undefined
  /**
   * Done with the question once the run asked: the executor stops the agent from outside then, so that no
   * combinator of the agent's (a race against a timer, `Effect.exit`, a fork) can swallow the stop.
   */
  readonly asked: Deferred.Deferred<string> = Deferred.unsafeMake(FiberId.none)

  constructor(
    private readonly runs: DurableRuns,
    readonly key: RunKey,
    /** What the run started from, as the store keeps it: the run's own, which its end deletes. */
    readonly request: string,
    private readonly steps: Map<string, string>,
    base: number,
    /** The last place the store has: a publish at or before it is dropped. */
    private readonly reached: number
  ) {
    this.place = base
  }

  /** The place of the next publish, or undefined when the store has it already. */
  next(): number | undefined {
    this.place++
    return this.place <= this.reached ? undefined : this.place
  }

  // Known by name and by how often that name came before: a step in a loop has a record per turn.
  private nameOf(name: string): string {
    const seen = (this.names.get(name) ?? 0) + 1
    this.names.set(name, seen)
    return seen === 1 ? name : `${name}#${seen}`
  }

  step<A, I, E, IE, R>(
    name: string,
    effect: Effect.Effect<A, E, R>,
    schemas: AgentExecutor.StepSchemas<A, I, E, IE>
  ): Effect.Effect<A, E, R> {
    return Effect.suspend(() => {
      const step = this.nameOf(name)
      const recorded = this.steps.get(step)
      if (recorded !== undefined) return this.replay(step, recorded, schemas)
      return Effect.flatMap(Effect.exit(effect), (exit) => {
        const record = this.recordOf(step, exit, schemas)
        if (record === undefined) return exit
        return Effect.flatMap(
          Effect.orDie(this.runs.record(this.key, step, record)),
          // Another process may have recorded it first: both go on from the first record.
          (kept) => kept === record ? exit : this.replay(step, kept, schemas)
        )
      })
    })
  }

  /** The record of `exit`, when it is one to keep: a success, or a typed failure with a schema. */
  private recordOf<A, I, E, IE>(
    step: string,
    exit: Exit.Exit<A, E>,
    schemas: AgentExecutor.StepSchemas<A, I, E, IE>
  ): string | undefined {
    const place = this.place
    if (Exit.isSuccess(exit)) {
      return JSON.stringify({ place, exit: { _tag: "Success", value: this.encode(step, schemas.success, exit.value) } })
    }
    const failure = Cause.failureOption(exit.cause)
    if (schemas.error === undefined || Option.isNone(failure) || !Cause.isFailType(exit.cause)) return undefined
    return JSON.stringify({ place, exit: { _tag: "Failure", error: this.encode(step, schemas.error, failure.value) } })
  }

  private encode<A, I>(step: string, schema: Schema.Schema<A, I>, value: A): unknown {
    const encoded = Schema.encodeEither(schema)(value)
    if (Either.isLeft(encoded)) throw unreadable(step, encoded.left)
    return encoded.right
  }

  private replay<A, I, E, IE>(
    step: string,
    text: string,
    schemas: AgentExecutor.StepSchemas<A, I, E, IE>
  ): Effect.Effect<A, E> {
    const record = JSON.parse(text) as StepRecord
    // Never back: steps that ran at once replay in an order of their own, and the place goes on from the last.
    this.place = Math.max(this.place, record.place)
    if (record.exit._tag === "Success") {
      return Effect.mapError(
        Schema.decodeUnknown(schemas.success)(record.exit.value),
        (error) => unreadable(step, error)
      )
        .pipe(Effect.orDie)
    }
    const schema = schemas.error
    if (schema === undefined) return Effect.die(new RecordUnreadable({ message: `Step "${step}" has no error schema` }))
    return Effect.flatMap(
      Effect.orDie(
        Effect.mapError(Schema.decodeUnknown(schema)(record.exit.error), (error) => unreadable(step, error))
      ),
      Effect.fail
    )
  }

  ask(question: string): Effect.Effect<AgentExecutor.RequestMessage> {
    return Effect.suspend(() => {
      const n = ++this.questions
      const answer = this.steps.get(`ask/${n}`)
      if (answer !== undefined) return Effect.succeed(fromUserMessage(Message.fromJSON(JSON.parse(answer))))
      // The run stops here: the executor interrupts the agent and ends the run INPUT_REQUIRED, and the answer
      // starts it again.
      return Effect.zipRight(
        Effect.orDie(this.runs.ask(this.key, n)),
        Effect.suspend(() => {
          this.asking ??= { n, question }
          return Effect.zipRight(Deferred.succeed(this.asked, this.asking.question), Effect.never)
        })
      )
    })
  }
}

/**
 * The durable side of a run that starts with `context`, and the request of
 * its agent: a resume and an answer run the request the run first started
 * with, noted in the store as a run starts. A resume counts against
 * `maxResumes`; an answer is recorded as the step its question waits on.
 */
export const start = (
  wiring: DurableWiring,
  context: RequestContext
): Effect.Effect<{ readonly run: DurableRun; readonly origin: Origin | undefined }, unknown> =>
  Effect.gen(function*() {
    const { runs } = wiring
    const key = keyOf(context)
    const loaded = yield* runs.load(key)
    const reached = placeOf(context.task)
    if (Option.isSome(loaded)) {
      const { row } = loaded.value
      const steps = new Map(loaded.value.steps)
      // A run whose process died: started again by a resume, or by a message to its task, which is still running,
      // that came first (on replicas, before a sweep found the run's claim lapsed). That message is no answer and
      // no new run: the run goes on, and the message stays in the task's history.
      if (isResume(context) || (context.task !== undefined && !taskState.isSettled(context.task.status?.state))) {
        const count = (yield* runs.resumed(key)) ?? 0
        if (count > wiring.maxResumes) {
          return yield* Effect.die(
            new ResumesSpent({
              message: `The run was started again ${
                count - 1
              } times after its process died (maxResumes ${wiring.maxResumes})`
            })
          )
        }
      } else if (row.asking !== undefined) {
        const record = JSON.stringify(Message.toJSON(context.userMessage))
        if (yield* runs.answer(key, row.asking, record)) steps.set(`ask/${row.asking}`, record)
      } else {
        // Left by a run that ended before its row went: this message starts a run of its own.
        yield* runs.end(key)
        return yield* fresh(wiring, context, reached)
      }
      const origin = decodeOrigin(row.request)
      return { run: new DurableRun(runs, key, row.request, steps, origin.base, reached), origin }
    }
    return yield* fresh(wiring, context, reached)
  })

const fresh = (wiring: DurableWiring, context: RequestContext, reached: number) => {
  const key = keyOf(context)
  const request = encodeOrigin({ request: context.request, task: context.task, base: reached })
  return Effect.as(
    wiring.runs.begin(key, request),
    { run: new DurableRun(wiring.runs, key, request, new Map(), reached, reached), origin: undefined }
  )
}

/** The request context a run that starts again runs its agent with: `context`'s, with the run's first request. @internal */
export const originContext = (context: RequestContext, origin: Origin): RequestContext =>
  Object.assign(Object.create(Object.getPrototypeOf(context) as object) as RequestContext, context, {
    request: origin.request,
    task: origin.task
  })
