import { Worker, type WorkerOptions } from 'node:worker_threads'

/**
 * A worker thread running the module `name` (e.g. `./dav-answers-worker`) beside `callerUrl` (the
 * caller's `import.meta.url`): the compiled .js beside a compiled caller, or under tsx (development,
 * tests, benches) the .ts.
 */
export function moduleWorker (callerUrl: string, name: string, options: WorkerOptions): Worker {
  if (!callerUrl.endsWith('.ts')) return new Worker(new URL(`${name}.js`, callerUrl), options)
  // tsx loads TypeScript in a worker only on the Node releases whose module hooks reach workers
  // (22.22.3, 24.11.1 and later); on the others the worker registers it itself, then imports the
  // module again under another URL (a failed import is remembered by its URL).
  const target = new URL(`${name}.ts`, callerUrl).href
  const bootstrap = `try { await import(${JSON.stringify(target)}) } catch (error) {
    if (error?.code !== 'ERR_UNKNOWN_FILE_EXTENSION') throw error
    ;(await import(${JSON.stringify(import.meta.resolve('tsx/esm/api'))})).register()
    await import(${JSON.stringify(`${target}?tsx`)})
  }`
  return new Worker(new URL(`data:text/javascript,${encodeURIComponent(bootstrap)}`), options)
}
