// Prometheus' text exposition format, read as a scraper reads it: `name{label="value",...} number`
// lines, with # HELP and # TYPE lines before each family.

export interface Sample { name: string, labels: Record<string, string>, value: number }

const SAMPLE_LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g

export function parseMetrics (text: string): Sample[] {
  const samples: Sample[] = []
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue
    const match = SAMPLE_LINE.exec(line)
    if (match === null) throw new Error(`not a sample line: ${line}`)
    const labels: Record<string, string> = {}
    for (const [, name, value] of (match[2] ?? '').matchAll(LABEL)) labels[name ?? ''] = (value ?? '').replace(/\\(.)/g, (_all, escaped: string) => escaped === 'n' ? '\n' : escaped)
    samples.push({ name: match[1] ?? '', labels, value: Number(match[3]) })
  }
  return samples
}

/** The sum of the samples of `name` whose labels include `labels`; undefined when there is none. */
export function metricValue (samples: Sample[], name: string, labels: Record<string, string> = {}): number | undefined {
  const matching = samples.filter((sample) => sample.name === name && Object.entries(labels).every(([label, value]) => sample.labels[label] === value))
  return matching.length === 0 ? undefined : matching.reduce((sum, sample) => sum + sample.value, 0)
}

/** The families a text declares (# TYPE lines), by name. */
function metricTypes (text: string): Map<string, string> {
  const types = new Map<string, string>()
  for (const [, name, type] of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) types.set(name ?? '', type ?? '')
  return types
}

export async function scrape (port: number, host = '127.0.0.1'): Promise<{ text: string, samples: Sample[], types: Map<string, string> }> {
  const answer = await fetch(`http://${host}:${port}/metrics`)
  if (answer.status !== 200) throw new Error(`/metrics answered ${answer.status}`)
  const text = await answer.text()
  return { text, samples: parseMetrics(text), types: metricTypes(text) }
}
