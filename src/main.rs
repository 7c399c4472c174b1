fn main() {
    println!("drainwatch");
}
