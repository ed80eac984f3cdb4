/**
 * A server's push notifications: the config store beside the task store,
 * the sender, its outbox in the task store's database when there is one, and
 * the run stage that feeds the sender each run's events. The SDK's own
 * sender is left out: it pushes from the request's event loop, which stops
 * when a streaming caller leaves.
 *
 * @internal
 */
import type { AgentExecutionEvent, ServerCallContext, TaskStore } from "@a2a-js/sdk/server"
import * as Config from "effect/Config"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Runtime from "effect/Runtime"
import type * as Scope from "effect/Scope"
import type * as A2AServer from "../../../A2AServer.js"
import { streamResponseOf } from "../handler/core.js"
import type * as internalRunStages from "../handler/runStages.js"
import { ConfigurationError } from "../run/executor.js"
import type { Forgotten } from "../store/shelf.js"
import * as internalTaskStore from "../store/taskStore.js"
import * as internalPushOutbox from "./pushOutbox.js"
import * as internalPushSender from "./pushSender.js"
import * as internalPushStore from "./pushStore.js"
import * as internalPushTarget from "./pushTarget.js"

/** @internal */
export interface Push {
  readonly store: internalPushStore.PushStore
  /**
   * Every event of a run handed to the sender once the store has it: a
   * receiver that reads the task on a notification finds it there, and an
   * event the store never took is never pushed.
   */
  readonly pushing: internalRunStages.RunStage
}

// The task of an event, read without building the stream response the sender takes.
const taskOf = (event: AgentExecutionEvent): string => event.kind === "task" ? event.data.id : event.data.taskId

const isConfig = (store: TaskStore | A2AServer.TaskStoreConfig | undefined): store is A2AServer.TaskStoreConfig =>
  store !== undefined && "_tag" in store

/** @internal */
export const make = (
  options: A2AServer.PushOptions,
  taskStore: TaskStore | A2AServer.TaskStoreConfig | undefined,
  agent: string,
  /** The memory task store's: the configs of a task it forgets go with it. */
  whenForgotten: ((listener: Forgotten) => void) | undefined
): Effect.Effect<Push, internalTaskStore.TaskStoreError | A2AServer.MakeError, Scope.Scope> =>
  Effect.gen(function*() {
    // An entry that matches nothing would fail closed without a word: refused at start-up instead.
    const invalid = internalPushTarget.invalidEntries(options.allowPushTargets ?? [])
    if (invalid.length > 0) {
      return yield* new ConfigurationError({
        reason: "InvalidOption",
        message: `allowPushTargets: not a host, address or CIDR block: ${
          invalid.map((entry) => JSON.stringify(entry)).join(", ")
        }`
      })
    }
    const nodeEnv = yield* Config.option(Config.string("NODE_ENV"))
    const policy = internalPushTarget.policyOf(options.allowPushTargets, Option.getOrUndefined(nodeEnv))
    const storeConfig = isConfig(taskStore) ? taskStore : "memory"
    const store = yield* Effect.mapError(
      internalPushStore.make(storeConfig, policy),
      (failure) => new internalTaskStore.TaskStoreError(failure)
    )
    const runFork = Runtime.runFork(yield* Effect.runtime<never>())
    const forget = (taskId: string, context: ServerCallContext) =>
      runFork(
        Effect.tryPromise(async () => {
          for (const config of await store.load(taskId, context)) await store.delete(taskId, context, config.id)
        }).pipe(Effect.ignoreLogged)
      )
    // In memory, at once and only where there are configs: the bounded store forgets a task on nearly every save once
    // it is full. A database store's retention deletes them with their tasks.
    if (store.forgetTask !== undefined) whenForgotten?.(store.forgetTask)
    // Made before the sender, so closed after it: this server's rows are freed once its deliveries have stopped.
    const outbox = storeConfig !== "memory" && internalTaskStore.isDatabase(storeConfig)
      ? yield* Effect.mapError(internalPushOutbox.make(storeConfig), (failure) =>
        new internalTaskStore.TaskStoreError(failure))
      : undefined
    const sender = yield* internalPushSender.make({
      store,
      agent,
      timeout: options.timeout ?? Duration.seconds(10),
      maxAttempts: options.maxAttempts ?? 8,
      budget: options.budget ?? Duration.minutes(5),
      backoff: options.backoff,
      maxPending: options.maxPending,
      lookup: internalPushTarget.guardedLookup(policy),
      outbox
    })
    return {
      store,
      pushing: {
        startNow: ({ requestContext }): internalRunStages.RunHooks => {
          const callContext = requestContext.context
          // The SDK stores a config sent with the message under the run's task id before the run; a run that
          // answers with a bare message makes no task, and nothing would ever remove it.
          const sentConfig = requestContext.request.configuration?.taskPushNotificationConfig !== undefined
          let answered = false
          return {
            event: (event) => {
              if (event.kind === "message") {
                answered = true
              }
              // Checked per event, not per run: a config can be saved while the task runs.
              if (store.mayHaveConfigs(taskOf(event))) {
                sender.notify(streamResponseOf(event), callContext)
              }
            },
            end: sentConfig && callContext !== undefined
              ? Effect.sync(() => {
                if (answered) {
                  forget(requestContext.taskId, callContext)
                }
              })
              : undefined
          }
        }
      }
    }
  })
