// Stable output for every test: no colours, a fixed terminal width, no developer kubeconfig leaking in.
process.env.NO_COLOR = '1'
process.env.COLUMNS = '120'
delete process.env.FORCE_COLOR
