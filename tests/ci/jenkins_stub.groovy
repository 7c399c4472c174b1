// A stand-in for the parts of Jenkins' declarative pipeline that docs/other-ci.md's Jenkinsfile
// uses, so that its Groovy runs here (tests/ci/test_other_ci.py): the Jenkinsfile is compiled
// by Groovy itself and evaluated with these steps bound. `sh` runs its script for real
// (`sh -xe`, as the step does); `error` fails the build; `post { always }` runs after the stages
// whatever happened; `junit` and `archiveArtifacts` record what they were given and whether the
// files exist. Not Jenkins: no agents, no sandbox, no declarative validation beyond this.
//
// Usage: groovy jenkins_stub.groovy JENKINSFILE WORKSPACE KUBECONFIG_FILE
// Prints one JSON line: {"result": ..., "error": ..., "sh": [codes], "junit": [...], "archive": [...]}
import groovy.json.JsonOutput

def (jenkinsfile, workspace, kubeconfig) = args as List
def log = [result: 'SUCCESS', error: null, sh: [], junit: [], archive: []]
def env = [:]
def sections = [:]
def binding = new Binding()

class PipelineError extends RuntimeException {
    PipelineError(String m) { super(m) }
}

binding.any = 'any'
binding.pipeline = { Closure body -> body() }
binding.agent = { a -> sections.agent = a }
binding.environment = { Closure c ->
    def m = [:]
    c.resolveStrategy = Closure.DELEGATE_FIRST
    c.delegate = m
    c()
    env.putAll(m)
}
binding.stages = { Closure c -> sections.stages = c }
binding.stage = { String name, Closure c -> c() }
binding.steps = { Closure c -> c() }
binding.script = { Closure c -> c() }
binding.post = { Closure c -> sections.post = c }
binding.always = { Closure c -> sections.always = c }
binding.file = { Map m -> m }
binding.withCredentials = { List creds, Closure c ->
    creds.each { env[it.variable] = kubeconfig }
    try { c() } finally { creds.each { env.remove(it.variable) } }
}
binding.sh = { Map m ->
    def pb = new ProcessBuilder(['sh', '-xe', '-c', m.script])
    pb.directory(new File(workspace))
    pb.environment().putAll(env.collectEntries { k, v -> [k, v.toString()] })
    pb.redirectErrorStream(true)
    pb.redirectOutput(ProcessBuilder.Redirect.to(new File(workspace, '.sh-step.log')))
    def code = pb.start().waitFor()
    log.sh << code
    if (!m.returnStatus && code != 0) throw new PipelineError("script returned exit code ${code}")
    code
}
binding.error = { String msg -> throw new PipelineError(msg) }
binding.junit = { Map m ->
    log.junit << [testResults: m.testResults, exists: new File(workspace, m.testResults).isFile()]
}
binding.archiveArtifacts = { Map m ->
    log.archive << [artifacts: m.artifacts, exists: new File(workspace, m.artifacts.replace('/**', '')).isDirectory()]
}

new GroovyShell(binding).evaluate(new File(jenkinsfile))
try {
    sections.stages()
} catch (PipelineError e) {
    log.result = 'FAILURE'
    log.error = e.message
}
sections.post()
sections.always?.call()
println JsonOutput.toJson(log)
