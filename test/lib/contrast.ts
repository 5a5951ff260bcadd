// WCAG contrast of colours as the web client draws them: a hex colour's channels, its relative
// luminance, the contrast of two colours, and CSS color-mix(in srgb, colour p%, paper).

export function channels (hex: string): number[] {
  return [1, 3, 5].map((start) => parseInt(hex.slice(start, start + 2), 16))
}

function luminance (rgb: number[]): number {
  const [r, g, b] = rgb.map((value) => {
    const c = value / 255
    return c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4
  }) as [number, number, number]
  return 0.2126 * r + 0.7152 * g + 0.0722 * b
}

export function contrast (a: number[], b: number[]): number {
  const [light, dark] = [luminance(a), luminance(b)].sort((x, y) => y - x) as [number, number]
  return (light + 0.05) / (dark + 0.05)
}

export function mix (color: string, share: number, paper: string): number[] {
  const [c, p] = [channels(color), channels(paper)]
  return c.map((value, index) => value * share + (p[index] as number) * (1 - share))
}
