# A Coder template for sandlot workspaces: one Docker container per workspace, built from
# ./image (Go, Node, Python and Rust toolchains plus the verify tools), with one agent whose
# directory is the project directory sandlot puts its worktree under, and a startup script
# that blocks login until the toolchains answer. See README.md for pushing it and for running
# sandlot against it.

terraform {
  required_providers {
    coder = {
      source  = "coder/coder"
      version = ">= 2.10.0"
    }
    docker = {
      source  = "kreuzwerker/docker"
      version = ">= 3.0.2"
    }
  }
}

variable "docker_host" {
  description = "Docker engine the workspaces run on (empty: the provisioner's default socket)."
  type        = string
  default     = ""
}

variable "image_versions" {
  description = "Toolchain versions baked into the workspace image (build arguments of image/Dockerfile)."
  type        = map(string)
  default = {
    GO_VERSION            = "1.24.6"
    NODE_VERSION          = "20.19.4"
    RUST_TOOLCHAIN        = "stable"
    GOLANGCI_LINT_VERSION = "v2.4.0"
  }
}

# ---- for hosts without internet or a bridge network (tests/template); defaults = production ----

variable "workspace_image" {
  description = "An image already on the workspaces' Docker engine to use instead of building ./image (empty: build ./image)."
  type        = string
  default     = ""
}

variable "network_mode" {
  description = "The container's Docker network mode (empty: the engine's default, a bridge; \"host\" on an engine without one)."
  type        = string
  default     = ""
}

variable "host_gateway" {
  description = "What host.docker.internal resolves to inside the container (\"host-gateway\": the Docker host; 127.0.0.1 with network_mode = \"host\")."
  type        = string
  default     = "host-gateway"
}

provider "coder" {}

provider "docker" {
  host = var.docker_host != "" ? var.docker_host : null
}

data "coder_provisioner" "me" {}
data "coder_workspace" "me" {}
data "coder_workspace_owner" "me" {}

locals {
  username    = "coder"
  home        = "/home/${local.username}"
  project_dir = "${local.home}/project"
  # The container name includes the owner: two users may name their workspaces alike.
  container_name = "coder-${data.coder_workspace_owner.me.name}-${lower(data.coder_workspace.me.name)}"
}

# ---- parameters (each can be set by a preset, `--parameter name=value`, or the UI) ----------

data "coder_parameter" "cpu_cores" {
  name         = "cpu_cores"
  display_name = "CPU cores"
  description  = "How many CPUs the workspace container may use (docker --cpus)."
  type         = "number"
  default      = "2"
  mutable      = true
  order        = 1
  option {
    name  = "1"
    value = "1"
  }
  option {
    name  = "2"
    value = "2"
  }
  option {
    name  = "4"
    value = "4"
  }
  option {
    name  = "8"
    value = "8"
  }
}

data "coder_parameter" "memory_gb" {
  name         = "memory_gb"
  display_name = "Memory (GiB)"
  description  = "Memory limit of the workspace container. Go, Rust and mypy builds want 4 or more."
  type         = "number"
  default      = "4"
  mutable      = true
  order        = 2
  validation {
    min   = 1
    max   = 64
    error = "memory_gb must be between {min} and {max}, got {value}"
  }
}

data "coder_parameter" "extra_packages" {
  name         = "extra_packages"
  display_name = "Extra Debian packages"
  description  = "Space-separated Debian packages installed at every start, before login (e.g. `libssl-dev protobuf-compiler`)."
  type         = "string"
  default      = ""
  mutable      = true
  order        = 3
  validation {
    regex = "^[a-z0-9.+ -]*$"
    error = "extra_packages takes Debian package names separated by spaces"
  }
}

data "coder_parameter" "ci_mode" {
  name         = "ci_mode"
  display_name = "CI mode"
  description  = "Sets CI=true in the workspace, so test runners and package managers behave as in CI (no prompts, no watch mode, plain output)."
  type         = "bool"
  default      = "false"
  mutable      = true
  order        = 4
}

# ---- presets: named parameter sets (`coder create --preset NAME`, sandlot preset=NAME) ------

data "coder_workspace_preset" "small" {
  name        = "small"
  description = "2 CPUs, 4 GiB: unit tests and linters of small projects."
  default     = true
  parameters = {
    (data.coder_parameter.cpu_cores.name) = "2"
    (data.coder_parameter.memory_gb.name) = "4"
  }
}

data "coder_workspace_preset" "large" {
  name        = "large"
  description = "8 CPUs, 16 GiB: Rust and Go builds, full test suites."
  parameters = {
    (data.coder_parameter.cpu_cores.name) = "8"
    (data.coder_parameter.memory_gb.name) = "16"
  }
}

data "coder_workspace_preset" "ci" {
  name        = "ci"
  description = "1 CPU, CI=true: one job of a fan-out, as in CI (memory left to choose)."
  parameters = {
    (data.coder_parameter.cpu_cores.name) = "1"
    (data.coder_parameter.ci_mode.name)   = "true"
  }
}

# ---- the agent -----------------------------------------------------------------------------

resource "coder_agent" "main" {
  arch = data.coder_provisioner.me.arch
  os   = "linux"
  # sandlot puts its worktree under the agent's directory (<dir>/.sandlot/worktree) unless the
  # caller passes workdir=. (Coder marks `dir` deprecated for Coder Desktop file sync; sandlot
  # reads it from `coder list -o json` as `directory`.)
  dir = local.project_dir

  env = merge({
    GOTOOLCHAIN = "local"
    # Caches on the home volume, so they survive stop/start.
    GOCACHE    = "${local.home}/.cache/go-build"
    GOMODCACHE = "${local.home}/go/pkg/mod"
  }, tobool(data.coder_parameter.ci_mode.value) ? tomap({ CI = "true" }) : tomap({}))

  metadata {
    key          = "toolchains"
    display_name = "Toolchains"
    script       = "printf '%s | %s | %s | %s' \"$(go version | cut -d' ' -f3)\" \"$(node --version)\" \"$(python3 --version | cut -d' ' -f2)\" \"$(rustc --version | cut -d' ' -f2)\""
    interval     = 3600
    timeout      = 10
  }
  metadata {
    key          = "load"
    display_name = "Load average"
    script       = "cut -d' ' -f1-3 /proc/loadavg"
    interval     = 30
    timeout      = 5
  }
  metadata {
    key          = "disk"
    display_name = "Home disk"
    script       = "df -h ${local.home} | awk 'NR==2 {print $3 \" / \" $2}'"
    interval     = 600
    timeout      = 10
  }
}

# Blocks login (and so sandlot, which waits for lifecycle_state "ready") until the workspace is
# usable: the project directory exists, extra packages are in, and every toolchain answers.
resource "coder_script" "prepare" {
  agent_id           = coder_agent.main.id
  display_name       = "Prepare sandlot workspace"
  run_on_start       = true
  start_blocks_login = true
  timeout            = 900
  script             = <<-EOT
    #!/bin/sh
    set -eu
    mkdir -p "${local.project_dir}/.sandlot"
    packages='${data.coder_parameter.extra_packages.value}'
    if [ -n "$packages" ]; then
      echo "installing extra packages: $packages"
      sudo apt-get update -qq
      # shellcheck disable=SC2086
      sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $packages
    fi
    missing=""
    for tool in sh tar sha256sum bash python3 go node npm cargo golangci-lint pytest ruff mypy uv; do
      command -v "$tool" >/dev/null 2>&1 || missing="$missing $tool"
    done
    if [ -n "$missing" ]; then
      echo "sandlot workspace: missing tools:$missing (rebuild the image from image/Dockerfile)" >&2
      exit 1
    fi
    go version; node --version; python3 --version; cargo --version
    # Written last: what ran before login can be checked from the first command on.
    date -u +%Y-%m-%dT%H:%M:%SZ > "${local.project_dir}/.sandlot/prepared"
    echo "sandlot workspace ready"
  EOT
}

# ---- the container -------------------------------------------------------------------------

resource "docker_image" "workspace" {
  count = var.workspace_image == "" ? 1 : 0
  name  = "sandlot-workspace:${substr(sha1(join(",", [filesha1("${path.module}/image/Dockerfile"), jsonencode(var.image_versions)])), 0, 12)}"
  build {
    context    = "${path.module}/image"
    build_args = var.image_versions
  }
  # Rebuild when the recipe or the versions change; keep the image for the next workspace.
  triggers = {
    recipe   = filesha1("${path.module}/image/Dockerfile")
    versions = jsonencode(var.image_versions)
  }
  keep_locally = true
}

# Templates pushed before workspace_image existed had the image without a count.
moved {
  from = docker_image.workspace
  to   = docker_image.workspace[0]
}

locals {
  image_id   = var.workspace_image != "" ? var.workspace_image : docker_image.workspace[0].image_id
  image_name = var.workspace_image != "" ? var.workspace_image : docker_image.workspace[0].name
}

resource "docker_volume" "home" {
  name = "coder-${data.coder_workspace.me.id}-home"
  # The home volume holds the user's work: never replace it because an attribute changed.
  lifecycle {
    ignore_changes = all
  }
  labels {
    label = "coder.owner"
    value = data.coder_workspace_owner.me.name
  }
  labels {
    label = "coder.workspace_id"
    value = data.coder_workspace.me.id
  }
}

resource "docker_container" "workspace" {
  # Stopping a workspace removes the container; the home volume stays.
  count    = data.coder_workspace.me.start_count
  image    = local.image_id
  name     = local.container_name
  hostname = data.coder_workspace.me.name
  user     = local.username
  # The agent dials the deployment; a deployment on the Docker host's loopback is reached
  # through host.docker.internal from inside the container.
  entrypoint = ["sh", "-c", replace(coder_agent.main.init_script, "/localhost|127\\.0\\.0\\.1/", "host.docker.internal")]
  env        = ["CODER_AGENT_TOKEN=${coder_agent.main.token}"]
  cpus       = data.coder_parameter.cpu_cores.value
  memory     = data.coder_parameter.memory_gb.value * 1024
  # An init as PID 1 reaps what killed commands leave behind.
  init         = true
  network_mode = var.network_mode != "" ? var.network_mode : null

  host {
    host = "host.docker.internal"
    ip   = var.host_gateway
  }
  volumes {
    container_path = local.home
    volume_name    = docker_volume.home.name
    read_only      = false
  }
  labels {
    label = "coder.owner"
    value = data.coder_workspace_owner.me.name
  }
  labels {
    label = "coder.workspace_id"
    value = data.coder_workspace.me.id
  }
}

resource "coder_metadata" "workspace" {
  count       = data.coder_workspace.me.start_count
  resource_id = docker_container.workspace[0].id
  item {
    key   = "image"
    value = local.image_name
  }
  item {
    key   = "project directory"
    value = local.project_dir
  }
}
