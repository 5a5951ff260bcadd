// What a served index.html tells the web client: the values it was built or served with, read
// from its configuration block as web/src/config.ts reads them.
const CONFIG_BLOCK = /<script id="calendar-config" type="application\/json">([^<]*)<\/script>/

/** The page's configuration, or null when it carries none (or none that parses). */
export function pageConfig (html: string): Record<string, unknown> | null {
  const block = CONFIG_BLOCK.exec(html)?.[1]
  if (block === undefined) return null
  try {
    return JSON.parse(block) as Record<string, unknown>
  } catch {
    return null
  }
}
