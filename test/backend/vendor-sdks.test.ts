// A vendor's SDK is loaded only when its block is configured: an install without billing or
// analytics never loads Stripe's or PostHog's package (their import alone costs every start). A
// child process imports every module the two services load at start, with a module hook that
// refuses the SDKs, then tries the Stripe and PostHog clients themselves: the hook must refuse
// those, or it proves nothing.
import { readdirSync } from 'node:fs'
import { join, relative } from 'node:path'
import { test } from 'tap'
import { startScript, writeTempFile } from '../processes.js'

const root = new URL('../../', import.meta.url).pathname
const REFUSED = ['stripe', 'posthog-node']
const CLIENTS = ['clients/stripe.ts', 'clients/posthog.ts']

/** Every TypeScript file under the directories, as paths from the repository's root. */
function sources (...directories: string[]): string[] {
  return directories.flatMap((directory) => readdirSync(join(root, directory), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts'))
    .map((entry) => relative(root, join(entry.parentPath, entry.name))))
}

test('the modules both services load at start import no vendor SDK; the SDKs\' own clients do', async (t) => {
  const startUp = [
    'app.ts', 'sync/app.ts',
    ...sources('plugins', 'routes', 'services', 'stores', 'sync/plugins', 'sync/routes', 'sync/services', 'sync/stores'),
    'clients/analytics.ts'
  ]
  const hooks = await writeTempFile('refuse-sdks.mjs', `
    export async function resolve (specifier, context, next) {
      if (${JSON.stringify(REFUSED)}.includes(specifier)) throw new Error('refused to load ' + specifier)
      return await next(specifier, context)
    }`)
  const register = await writeTempFile('register.mjs', `import { register } from 'node:module'\nregister(${JSON.stringify(`file://${hooks}`)})\n`)
  const script = await writeTempFile('import-all.mjs', [
    ...startUp.map((file) => `await import(${JSON.stringify(join(root, file))})`),
    'console.log("start-up modules imported")',
    ...CLIENTS.map((file) => `await import(${JSON.stringify(join(root, file))}).then(() => console.log(${JSON.stringify(`${file} loaded`)}), (error) => console.log(${JSON.stringify(`${file}: `)} + error.message))`)
  ].join('\n') + '\n')
  const child = startScript(t, script, [], { NODE_OPTIONS: `--import ${register}` })
  const code = await child.exited
  const output = child.output()
  t.equal(code, 0, `the child ended well: ${output.slice(-400)}`)
  t.match(output, 'start-up modules imported', `${startUp.length} start-up modules imported without Stripe's or PostHog's package`)
  t.match(output, 'clients/stripe.ts: refused to load stripe', 'the hook refuses Stripe\'s client')
  t.match(output, 'clients/posthog.ts: refused to load posthog-node', 'and PostHog\'s')
})
