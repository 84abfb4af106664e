//! Prints the Berth CRD (what `berth controller crd` prints).
fn main() {
    print!("{}", berth_controller::crd_yaml());
}
